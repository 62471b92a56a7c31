"""The claim path in SQLAlchemy Core (R-SC-2, issue 14): statements built once at import, so the
engine compiles each once per dialect and reuses it (the ORM's bulk UPDATE … RETURNING and its
per-row object loading were most of a claim's server CPU); the answer is built from the rows the
statements return, never from loaded ORM objects. What the answer needs besides the task (its
issue, the workspace, the project's title and description, the earlier session to resume) is in
the marking statement's RETURNING on PostgreSQL (`UPDATE … FROM issue, workspace`, subqueries for
the rest); SQLite's RETURNING names columns without their table and cannot name another table,
so there it is one SELECT after the mark (in-process). The daemon's owner is a subquery of the
pick, so no daemon row is loaded either; its capabilities are read only when a task has resources
to check them against.

Semantics are those of `tasks.claim_as` (its docstring): one statement selects, locks (PostgreSQL:
FOR UPDATE SKIP LOCKED) and marks; agents already at their limit are left out inside it; then a
count under the claimed agents' row locks hands back whatever went past a limit.
"""
from __future__ import annotations

import secrets
from datetime import timedelta
from types import SimpleNamespace
from typing import Any, Callable

from sqlalchemy import String, and_, any_, bindparam, func, insert, or_, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from .. import allowhosts
from ..protocol import ClaimContext, Event, ResourceRow, WorkspaceRef
from .. import resources as registry
from ..resources.local_urls import entry_url, local_git_url
from ..store import direct
from ..store.schema import (
    HOLDING_STATUSES, TASK_ROW_COLUMNS, TERMINAL_STATUSES, Agent, Daemon, Issue, Member, Project, ProjectResource,
    Runtime, Task, Token, Workspace, new_id, one_of, utcnow,
)
from . import auth
from .events import emit

_task = Task.__table__
_agent = Agent.__table__
_issue = Issue.__table__
_runtime = Runtime.__table__
_token = Token.__table__
_daemon = Daemon.__table__
_ws = Workspace.__table__
_project = Project.__table__

HOLDING = HOLDING_STATUSES

# -- the statements, built once ---------------------------------------------------------------

_daemon_runtimes = select(_runtime.c.id).where(_runtime.c.daemon_id == bindparam("p_daemon"))
_daemon_providers = select(_runtime.c.provider).where(_runtime.c.daemon_id == bindparam("p_daemon"))
_daemon_owner = select(_daemon.c.owner_id).where(_daemon.c.id == bindparam("p_daemon")).scalar_subquery()
# How many tasks the agent holds now, counted on ix_task_agent_status for that agent alone: the
# cost is the agent's, not the workspace's (a GROUP BY over every held task of the workspace read
# one row per running task of the whole team on every claim, and before the table's first ANALYZE
# it read every task of the workspace).
_holder = _task.alias("holder")
_held_now = (select(func.count()).select_from(_holder)
             .where(_holder.c.agent_id == _agent.c.id, one_of(_holder.c.status, HOLDING))
             .correlate(_agent).scalar_subquery())


# The agents whose queued tasks this daemon may take: its owner's (R-SEC-6), on one of its runtimes
# (or on none, with a provider it runs), not at their limit (agents at their limit must not hide
# other agents' work behind their queued tasks). A handful of rows, whatever the queue's length.
_eligible = (select(_agent.c.id)
             .where(_agent.c.workspace_id == bindparam("p_ws"), _agent.c.owner_id == _daemon_owner,
                    or_(_agent.c.runtime_id.in_(_daemon_runtimes),
                        and_(_agent.c.runtime_id.is_(None), _agent.c.provider.in_(_daemon_providers))),
                    _held_now < _agent.c.max_concurrent_tasks))


def _pick(*, one: bool, postgres: bool, held: Any = None):
    # PostgreSQL: `agent_id = ANY(ARRAY(…))` is computed once, before the scan (an InitPlan), so the
    # planner walks ix_task_queue_order in order and stops at the first unlocked task; as a
    # join (what IN becomes) it joined and sorted every queued task of the workspace, a cost that
    # grew with the queue (18 ms of PostgreSQL CPU per claim at 600 queued).
    eligible = (any_(func.array(_eligible.scalar_subquery())) == _task.c.agent_id) if postgres \
        else _task.c.agent_id.in_(_eligible)
    q = (select(_task.c.id)
         .where(_task.c.workspace_id == bindparam("p_ws"), _task.c.status == "queued", eligible)
         .order_by(_task.c.created_at, _task.c.id).limit(bindparam("p_limit")))
    if one:
        q = q.where(_task.c.id == bindparam("p_task"))
    if held is not None:  # reached hard budgets hold these back (service/budgets.py): a rare, uncached form
        if held.agents:
            q = q.where(_task.c.agent_id.not_in(sorted(held.agents)))
        if held.projects:
            q = q.where(or_(_task.c.project_id.is_(None), _task.c.project_id.not_in(sorted(held.projects))))
    if postgres:
        q = q.with_for_update(of=_task, skip_locked=True)
    return q


# The daemon's runtime for the agent: the agent's own, else this daemon's one for its provider.
_runtime_of_agent = (select(func.coalesce(_agent.c.runtime_id, select(_runtime.c.id).where(
    _runtime.c.daemon_id == bindparam("p_daemon"), _runtime.c.provider == _agent.c.provider)
    .limit(1).scalar_subquery())).where(_agent.c.id == _task.c.agent_id).scalar_subquery())

# The CLI session of the agent's latest earlier task on this issue, if it ran on this daemon (where
# the CLI keeps its sessions): the next task continues it (R-EX-10).
_prev = _task.alias("prev")
_resume = (select(_prev.c.session_id)
           .where(_prev.c.agent_id == _task.c.agent_id, _prev.c.issue_id == _task.c.issue_id,
                  _prev.c.id != _task.c.id, _prev.c.daemon_id == bindparam("p_daemon"),
                  _prev.c.session_id.is_not(None), one_of(_prev.c.status, TERMINAL_STATUSES))
           .order_by(_prev.c.finished_at.desc(), _prev.c.created_at.desc()).limit(1)
           .correlate(_task).scalar_subquery().label("resume_session_id"))
_project_title = (select(_project.c.title).where(_project.c.id == _task.c.project_id)
                  .correlate(_task).scalar_subquery().label("project_title"))
_project_description = (select(_project.c.description).where(_project.c.id == _task.c.project_id)
                        .correlate(_task).scalar_subquery().label("project_description"))
_ISSUE_COLUMNS = [c.name for c in _issue.c]
_WS_COLUMNS = ("id", "slug", "name", "repos")
#: What the answer needs beside the task row, labelled alike in both forms below.
_DETAILS = [_resume, _project_title, _project_description,
            *(_issue.c[n].label(f"i_{n}") for n in _ISSUE_COLUMNS), *(_ws.c[n].label(f"ws_{n}") for n in _WS_COLUMNS)]


def _mark(pick, *, postgres: bool):
    stmt = (update(_task).where(_task.c.id.in_(pick.scalar_subquery()))
            .values(status="dispatched", daemon_id=bindparam("p_daemon"), wait_reason=None,
                    runtime_id=_runtime_of_agent, dispatched_at=bindparam("p_now"),
                    attempt=_task.c.attempt + 1, lease_expires_at=bindparam("p_lease"),
                    updated_at=bindparam("p_now")))
    if postgres:  # UPDATE … FROM: the details come back with the task
        return (stmt.where(_issue.c.id == _task.c.issue_id, _ws.c.id == _task.c.workspace_id)
                .returning(*TASK_ROW_COLUMNS, *_DETAILS))
    # SQLite's RETURNING names columns without their table (so no correlated subquery there) and
    # cannot name another table: the details are one SELECT after it (in-process).
    return stmt.returning(*TASK_ROW_COLUMNS)


_DETAILS_OF = (select(_task.c.id, *_DETAILS)
               .join_from(_task, _issue, _issue.c.id == _task.c.issue_id)
               .join(_ws, _ws.c.id == _task.c.workspace_id)
               .where(_task.c.id.in_(bindparam("ids", expanding=True))))


def _ids(column, postgres: bool):
    """`column IN :ids`: an array parameter on PostgreSQL (one statement text whatever the count);
    SQLite has no arrays, so there SQLAlchemy writes the list into the text on each execution."""
    if postgres:
        return column == any_(bindparam("ids", type_=ARRAY(String)))
    return column.in_(bindparam("ids", expanding=True))


_MARK = {(one, pg): _mark(_pick(one=one, postgres=pg), postgres=pg) for one in (False, True) for pg in (False, True)}
_AGENTS = {pg: select(*_agent.c).where(_ids(_agent.c.id, pg)).order_by(_agent.c.id) for pg in (False, True)}
_AGENTS_LOCKED = _AGENTS[True].with_for_update(of=_agent)
_HELD = {pg: (select(_task.c.agent_id, func.count())
              .where(_ids(_task.c.agent_id, pg), one_of(_task.c.status, HOLDING))
              .group_by(_task.c.agent_id)) for pg in (False, True)}
_BACK = (update(_task).where(_task.c.id == bindparam("b_id"))
         .values(status="queued", daemon_id=None, lease_expires_at=None, dispatched_at=None,
                 attempt=_task.c.attempt - 1))
_SET_CONTEXT = {pg: update(_task).where(_ids(_task.c.id, pg)).values(context=bindparam("context"))
                for pg in (False, True)}
_pr = ProjectResource.__table__
_RESOURCES = (select(_pr.c.id, _pr.c.resource_type, _pr.c.resource_ref, _pr.c.label, _pr.c.created_by)
              .where(_pr.c.project_id == bindparam("id")).order_by(_pr.c.position, _pr.c.created_at))
_member = Member.__table__
# Read only for a row (or workspace repository) that is a folder on the fetching machine (R-SEC-6).
_OWNER_AND_ROLE = (select(_daemon.c.owner_id, _member.c.role)
                   .outerjoin(_member, and_(_member.c.user_id == _daemon.c.owner_id,
                                            _member.c.workspace_id == _daemon.c.workspace_id))
                   .where(_daemon.c.id == bindparam("p_daemon")))
_DAEMON_CAPS = select(_daemon.c.capabilities).where(_daemon.c.id == bindparam("p_daemon"))
_RUNTIME_CAPS = select(_runtime.c.capabilities).where(_runtime.c.daemon_id == bindparam("p_daemon"))
_MINT = insert(_token)
# PostgreSQL, the usual claim (one task, no resources): the context and the token in one statement.
# Its parameters are named apart from both tables' columns: an UPDATE would take a parameter named
# like one of its columns as a value to set.
# Column defaults are not filled in for such a statement: `_token_row` gives every column.
_TOKEN_FIELDS = ("id", "token_hash", "kind", "name", "workspace_id", "daemon_id", "task_id", "created_at",
                 "expires_at", "revoked")
_MINT_WITH_CONTEXT = (insert(_token).values(**{f: bindparam(f"tok_{f}") for f in _TOKEN_FIELDS})
                      .add_cte(update(_task).where(_task.c.id == bindparam("ctx_task"))
                               .values(context=bindparam("ctx_context"), updated_at=bindparam("ctx_now"))
                               .cte("with_context")))


def _context(session: Session, ws: Any, project_id: str | None, details: Any, daemon_id: str) -> ClaimContext:
    """What the daemon needs to run the task, and only what concerns it (R-RES-8). `details`: the
    task's project title and description (None: no project, or it is gone).

    A repository that is a folder on the fetching machine (`file://…`) reads whichever machine's
    daemon fetches it, so it goes only to the daemons of the person who added it: a resource to
    its creator's, the workspace's list (which only owners give such URLs) to owners' (R-SEC-6)."""
    asked: list[Any] = []

    def daemon_owner() -> Any:  # (owner id, their role here), read once and only when a row asks
        if not asked:
            asked.append(session.execute(_OWNER_AND_ROLE, {"p_daemon": daemon_id}).first()
                         or SimpleNamespace(owner_id=None, role=None))
        return asked[0]

    title = details["project_title"]
    if title is None:
        project_id = None
    resources = []
    if project_id is not None:
        for r in session.execute(_RESOURCES, {"id": project_id}):
            try:
                handler = registry.get(r.resource_type)
            except registry.ResourceError:
                continue  # a type this server no longer knows: nothing safe to send
            if handler.adders_machines_only(r.resource_ref) and (
                    r.created_by is None or r.created_by != daemon_owner().owner_id):
                continue  # a folder on the machine of whoever added it, and not this daemon's owner
            if handler.visible_to_daemon(r.resource_ref, daemon_id):
                resources.append(ResourceRow(id=r.id, resource_type=r.resource_type,
                                             resource_ref=r.resource_ref, label=r.label))
    repos = list(ws.repos or [])
    if any(_local_repo(r) for r in repos) and daemon_owner().role != "owner":
        repos = [r for r in repos if not _local_repo(r)]
    return ClaimContext(workspace=WorkspaceRef(id=ws.id, slug=ws.slug, name=ws.name), workspace_repos=tuple(repos),
                        project_id=project_id, project_title=title,
                        project_description=details["project_description"] if project_id else None,
                        resources=tuple(resources))


def _local_repo(entry: Any) -> bool:
    """A workspace repository that is a folder on the fetching machine (or has no URL to judge)."""
    url = entry_url(entry)
    return url is None or local_git_url(url)


def _token_row(daemon_id: str, task: Any, expires_at: Any) -> tuple[str, dict[str, Any]]:
    """auth.mint for a task token, as a row for one Core INSERT (no ORM object to flush)."""
    raw = auth.PREFIX["task"] + secrets.token_urlsafe(32)
    return raw, {"id": new_id(), "token_hash": auth.hash_token(raw), "kind": "task", "name": f"task {task.id}",
                 "workspace_id": task.workspace_id, "daemon_id": daemon_id, "task_id": task.id,
                 "created_at": utcnow(), "expires_at": expires_at, "revoked": False}


def _declared(session: Session, daemon_id: str) -> set[str]:
    declared = set(session.scalar(_DAEMON_CAPS, {"p_daemon": daemon_id}) or [])
    for caps in session.scalars(_RUNTIME_CAPS, {"p_daemon": daemon_id}):
        declared |= set(caps or [])
    return declared


def claim(session: Session, daemon_id: str, workspace_id: str, *, limit: int = 1, task_id: str | None = None,
          lease: timedelta, refuse: Callable[[Session, Task, str], None], held: Any = None) -> list[dict[str, Any]]:
    """`refuse(session, task, reason)` ends a claimed task this daemon cannot run as asked (the
    task service's finish: this module never finishes a task itself). `held`: the projects and
    agents reached hard budgets hold back (budgets.Blocks), whose tasks are not picked."""
    if limit < 1:
        return []
    postgres = session.bind.dialect.name == "postgresql"
    now = utcnow()
    params = {"p_daemon": daemon_id, "p_ws": workspace_id, "p_limit": limit, "p_now": now, "p_lease": now + lease}
    if task_id:
        params["p_task"] = task_id
    # Core statements on the session's connection: the ORM's execution layer adds nothing here.
    conn = session.connection()
    mark = _MARK[(bool(task_id), postgres)] if held is None else \
        _mark(_pick(one=bool(task_id), postgres=postgres, held=held), postgres=postgres)
    picked = direct.rows(conn, mark, params)
    if not picked:
        return []
    agent_ids = sorted({t.agent_id for t in picked})
    agents = {a.id: a for a in direct.rows(conn, _AGENTS_LOCKED if postgres else _AGENTS[False], {"ids": agent_ids})}
    picked = sorted(_within_limits(session, conn, picked, agents, postgres), key=lambda t: (t.created_at, t.id))
    if not picked:
        return []
    if postgres:
        details = {t.id: t._mapping for t in picked}
    else:
        details = {d.id: d._mapping for d in conn.execute(_DETAILS_OF, {"ids": [t.id for t in picked],
                                                                          "p_daemon": daemon_id})}
    first = details[picked[0].id]
    ws = SimpleNamespace(**{n: first[f"ws_{n}"] for n in _WS_COLUMNS})  # the daemon's workspace
    contexts: dict[str | None, ClaimContext] = {}  # one per project within this claim
    for task in picked:
        if task.project_id not in contexts:
            contexts[task.project_id] = _context(session, ws, task.project_id, details[task.id], daemon_id)
    # One write per project, unless it can go with the token below (one round trip fewer).
    # (Only a task that cannot be refused: no resources, no allowlist to check the daemon for.)
    joined = (postgres and len(picked) == 1 and not contexts[picked[0].project_id].resources
              and agents[picked[0].agent_id].network != "allowlist")
    for project_id, context in contexts.items():
        if not joined:
            direct.rows(conn, _SET_CONTEXT[postgres], {"ids": [t.id for t in picked if t.project_id == project_id],
                                                       "context": context.to_wire()})
    declared: set[str] | None = None
    claimed = []
    tokens = []
    expires_at = now + timedelta(days=2)
    for task in picked:
        context = contexts[task.project_id]
        fenced = agents[task.agent_id].network == "allowlist"
        if context.resources or fenced:
            if declared is None:
                declared = _declared(session, daemon_id)
            reason = _missing_capability(context, declared) or (_unfenced(agents[task.agent_id], declared)
                                                                 if fenced else None)
            if reason:  # R-RES-9: never silently run in place; R-SEC-9: nor on the open network
                orm_task = session.get(Task, task.id, populate_existing=True)
                refuse(session, orm_task, reason)
                # It took a place in this claim: daemons look again (a claim answered with fewer
                # than asked means nothing more is queued for the claimer, daemon/main.py).
                emit(session, task.workspace_id, Event.TASK_QUEUED, owner_id=agents[task.agent_id].owner_id)
                continue
        raw, row = _token_row(daemon_id, task, expires_at)
        tokens.append(row)
        d = details[task.id]
        claimed.append({"task": task, "agent": agents[task.agent_id],
                        "issue": SimpleNamespace(**{n: d[f"i_{n}"] for n in _ISSUE_COLUMNS}),
                        "context": context, "token": raw, "resume_session_id": d["resume_session_id"]})
        emit(session, task.workspace_id, Event.TASK_CHANGED, task_id=task.id, status=task.status)
    if joined:  # (such a task is never refused: its token is there)
        direct.rows(conn, _MINT_WITH_CONTEXT, {**{f"tok_{f}": tokens[0][f] for f in _TOKEN_FIELDS},
                                               "ctx_task": picked[0].id, "ctx_context": contexts[picked[0].project_id].to_wire(),
                                               "ctx_now": now})
    elif tokens:  # (a claim with resources or of several tasks: not the hot path)
        conn.execute(_MINT, tokens if len(tokens) > 1 else tokens[0])
    return claimed


def _missing_capability(context: ClaimContext, declared: set[str]) -> str | None:
    for r in context.resources:
        needed = registry.get(r.resource_type).required_capabilities(dict(r.resource_ref)) - declared
        if needed:
            return (f"this daemon does not declare {', '.join(sorted(needed))}, needed for the "
                    f"{r.resource_type} resource {r.label or r.id}; update Predictor X on this "
                    "machine and restart its daemon (the task was not run in place instead)")
    return None


def _unfenced(agent: Any, declared: set[str]) -> str | None:
    if allowhosts.DAEMON_CAPABILITY in declared:
        return None
    return (f"agent {agent.name} has a network allowlist and this daemon does not declare "
            f"{allowhosts.DAEMON_CAPABILITY} (it would run the agent on the open network); update Predictor X on "
            "this machine and restart its daemon")


def _within_limits(session: Session, conn: Connection, picked: list[Any], agents: dict[str, Any], postgres: bool) -> list[Any]:
    """Whatever went past an agent's limit goes back to the queue (and daemons are told to look
    again). On PostgreSQL the agents' rows are locked by now, so the count sees every committed
    claim as well as ours."""
    held = dict(direct.rows(conn, _HELD[postgres], {"ids": list(agents)}))
    kept: list[Any] = []
    over: list[Any] = []
    for task in sorted(picked, key=lambda t: (t.created_at, t.id), reverse=True):  # newest go back first
        agent_id = task.agent_id
        if held.get(agent_id, 0) > agents[agent_id].max_concurrent_tasks:
            held[agent_id] -= 1
            over.append(task)
        else:
            kept.append(task)
    if over:
        conn.execute(_BACK, [{"b_id": t.id} for t in over])
        # (every agent a daemon claims for is its owner's: their daemons may take these)
        emit(session, over[0].workspace_id, Event.TASK_QUEUED, owner_id=agents[over[0].agent_id].owner_id)
    return kept
