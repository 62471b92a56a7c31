"""The claim path in SQLAlchemy Core (R-SC-2, issue 14): statements built once at import, so the
engine compiles each once per dialect and reuses it (the ORM's bulk UPDATE … RETURNING and its
per-row object loading were most of a claim's server CPU); the answer is built from the rows the
statements return, never from loaded ORM objects.

Semantics are those of `tasks.claim` (its docstring): one statement selects, locks (PostgreSQL:
FOR UPDATE SKIP LOCKED) and marks; agents already at their limit are left out inside it; then a
count under the claimed agents' row locks hands back whatever went past a limit.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable

import secrets

from sqlalchemy import and_, bindparam, func, insert, or_, select, update
from sqlalchemy.orm import Session

from .. import resources as registry
from ..store.schema import (
    HOLDING_STATUSES, TERMINAL_STATUSES, Agent, Daemon, Issue, Project, ProjectResource, Runtime, Task, Token,
    Workspace, utcnow,
)
from . import auth
from .events import emit

_task = Task.__table__
_agent = Agent.__table__
_issue = Issue.__table__
_runtime = Runtime.__table__
_token = Token.__table__

HOLDING = HOLDING_STATUSES

# -- the statements, built once ---------------------------------------------------------------

_daemon_runtimes = select(_runtime.c.id).where(_runtime.c.daemon_id == bindparam("p_daemon"))
_daemon_providers = select(_runtime.c.provider).where(_runtime.c.daemon_id == bindparam("p_daemon"))
# Agents at their limit must not hide other agents' work behind their queued tasks.
_full = (select(_task.c.agent_id).join(_agent, _agent.c.id == _task.c.agent_id)
         .where(_task.c.workspace_id == bindparam("p_ws"), _task.c.status.in_(HOLDING))
         .group_by(_task.c.agent_id, _agent.c.max_concurrent_tasks)
         .having(func.count() >= _agent.c.max_concurrent_tasks))


def _pick(*, one: bool, postgres: bool):  # noqa: ANN202
    q = (select(_task.c.id).join(_agent, _agent.c.id == _task.c.agent_id)
         .where(_task.c.workspace_id == bindparam("p_ws"), _task.c.status == "queued",
                _agent.c.owner_id == bindparam("p_owner"),  # only its owner's agents run here (R-SEC-6)
                or_(_agent.c.runtime_id.in_(_daemon_runtimes),
                    and_(_agent.c.runtime_id.is_(None), _agent.c.provider.in_(_daemon_providers))),
                _task.c.agent_id.notin_(_full))
         .order_by(_task.c.created_at, _task.c.id).limit(bindparam("p_limit")))
    if one:
        q = q.where(_task.c.id == bindparam("p_task"))
    if postgres:
        q = q.with_for_update(of=_task, skip_locked=True)
    return q


# The daemon's runtime for the agent: the agent's own, else this daemon's one for its provider.
_runtime_of_agent = (select(func.coalesce(_agent.c.runtime_id, select(_runtime.c.id).where(
    _runtime.c.daemon_id == bindparam("p_daemon"), _runtime.c.provider == _agent.c.provider)
    .limit(1).scalar_subquery())).where(_agent.c.id == _task.c.agent_id).scalar_subquery())


def _mark(pick):  # noqa: ANN001, ANN202
    return (update(_task).where(_task.c.id.in_(pick.scalar_subquery()))
            .values(status="dispatched", daemon_id=bindparam("p_daemon"), wait_reason=None,
                    runtime_id=_runtime_of_agent, dispatched_at=bindparam("p_now"),
                    attempt=_task.c.attempt + 1, lease_expires_at=bindparam("p_lease"),
                    updated_at=bindparam("p_now"))
            .returning(*_task.c))


_MARK = {(one, pg): _mark(_pick(one=one, postgres=pg)) for one in (False, True) for pg in (False, True)}
_AGENTS = select(*_agent.c).where(_agent.c.id.in_(bindparam("ids", expanding=True))).order_by(_agent.c.id)
_AGENTS_LOCKED = _AGENTS.with_for_update(of=_agent)
_HELD = (select(_task.c.agent_id, func.count())
         .where(_task.c.agent_id.in_(bindparam("ids", expanding=True)), _task.c.status.in_(HOLDING))
         .group_by(_task.c.agent_id))
_ISSUES = select(*_issue.c).where(_issue.c.id.in_(bindparam("ids", expanding=True)))
_BACK = (update(_task).where(_task.c.id == bindparam("b_id"))
         .values(status="queued", daemon_id=None, lease_expires_at=None, dispatched_at=None,
                 attempt=_task.c.attempt - 1))
_SET_CONTEXT = update(_task).where(_task.c.id == bindparam("b_id")).values(context=bindparam("context"))
_WORKSPACE = select(Workspace.__table__.c.id, Workspace.__table__.c.slug, Workspace.__table__.c.name,
                    Workspace.__table__.c.repos).where(Workspace.__table__.c.id == bindparam("id"))
_PROJECT = select(Project.__table__.c.id, Project.__table__.c.title, Project.__table__.c.description) \
    .where(Project.__table__.c.id == bindparam("id"))
_pr = ProjectResource.__table__
_RESOURCES = (select(_pr.c.id, _pr.c.resource_type, _pr.c.resource_ref, _pr.c.label)
              .where(_pr.c.project_id == bindparam("id")).order_by(_pr.c.position, _pr.c.created_at))
_RUNTIME_CAPS = select(_runtime.c.capabilities).where(_runtime.c.daemon_id == bindparam("p_daemon"))
_MINT = insert(_token)


def _context(session: Session, workspace_id: str, project_id: str | None, daemon_id: str) -> dict[str, Any]:
    """What the daemon needs to run the task, and only what concerns it (R-RES-8)."""
    ws = session.execute(_WORKSPACE, {"id": workspace_id}).one()
    project = session.execute(_PROJECT, {"id": project_id}).first() if project_id else None
    resources = []
    if project is not None:
        for r in session.execute(_RESOURCES, {"id": project.id}):
            try:
                handler = registry.get(r.resource_type)
            except registry.ResourceError:
                continue  # a type this server no longer knows: nothing safe to send
            if handler.visible_to_daemon(r.resource_ref, daemon_id):
                resources.append({"id": r.id, "resource_type": r.resource_type,
                                  "resource_ref": r.resource_ref, "label": r.label})
    # Flat, in the shape the daemon's TaskContext reads (and resources.json shows).
    return {
        "workspace": {"id": ws.id, "slug": ws.slug, "name": ws.name},
        "workspace_repos": list(ws.repos or []),
        "project_id": project.id if project else None,
        "project_title": project.title if project else None,
        "project_description": project.description if project else None,
        "resources": resources,
    }


def _mint_task_token(session: Session, daemon_id: str, task: Any) -> str:
    """auth.mint for a task token, as one Core INSERT (no ORM object to flush)."""
    raw = auth.PREFIX["task"] + secrets.token_urlsafe(32)
    session.execute(_MINT, {"token_hash": auth.hash_token(raw), "kind": "task", "name": f"task {task.id}",
                            "workspace_id": task.workspace_id, "daemon_id": daemon_id, "task_id": task.id,
                            "expires_at": utcnow() + timedelta(days=2)})
    return raw


def claim(session: Session, daemon: Daemon, *, limit: int = 1, task_id: str | None = None,
          lease: timedelta, refuse: Callable[[Session, Task, str], None]) -> list[dict[str, Any]]:
    """`refuse(session, task, reason)` ends a claimed task this daemon cannot run as asked (the
    task service's finish: this module never finishes a task itself)."""
    if limit < 1:
        return []
    postgres = session.bind.dialect.name == "postgresql"
    now = utcnow()
    params = {"p_daemon": daemon.id, "p_ws": daemon.workspace_id, "p_owner": daemon.owner_id,
              "p_limit": limit, "p_now": now, "p_lease": now + lease}
    if task_id:
        params["p_task"] = task_id
    picked = session.execute(_MARK[(bool(task_id), postgres)], params).all()
    if not picked:
        return []
    agent_ids = sorted({t.agent_id for t in picked})
    agents = {a.id: a for a in session.execute(_AGENTS_LOCKED if postgres else _AGENTS, {"ids": agent_ids})}
    picked = _within_limits(session, picked, agents)
    issues = {i.id: i for i in session.execute(_ISSUES, {"ids": sorted({t.issue_id for t in picked})})}
    declared: set[str] | None = None
    contexts: dict[str | None, dict[str, Any]] = {}  # one per project within this claim
    claimed = []
    for task in sorted(picked, key=lambda t: (t.created_at, t.id)):
        if task.project_id not in contexts:
            contexts[task.project_id] = _context(session, task.workspace_id, task.project_id, daemon.id)
        context = contexts[task.project_id]
        session.execute(_SET_CONTEXT, {"b_id": task.id, "context": context})
        if context["resources"]:
            if declared is None:
                declared = set(daemon.capabilities or [])
                for caps in session.scalars(_RUNTIME_CAPS, {"p_daemon": daemon.id}):
                    declared |= set(caps or [])
            reason = _missing_capability(context, declared)
            if reason:  # R-RES-9: never silently run in place
                orm_task = session.get(Task, task.id, populate_existing=True)
                refuse(session, orm_task, reason)
                continue
        token = _mint_task_token(session, daemon.id, task)
        claimed.append({"task": task, "agent": agents[task.agent_id], "issue": issues[task.issue_id],
                        "context": context, "token": token,
                        "resume_session_id": resumable_session(session, task, daemon.id)})
        emit(session, task.workspace_id, "task_changed", task_id=task.id, status=task.status)
    return claimed


def resumable_session(session: Session, task: Task, daemon_id: str) -> str | None:
    """The CLI session of the agent's latest earlier task on this issue, if it ran on this daemon
    (where the CLI keeps its sessions): the next task continues it (R-EX-10)."""
    return session.scalar(
        select(Task.session_id).where(Task.agent_id == task.agent_id, Task.issue_id == task.issue_id,
                                      Task.id != task.id, Task.daemon_id == daemon_id,
                                      Task.session_id.is_not(None), Task.status.in_(TERMINAL_STATUSES))
        .order_by(Task.finished_at.desc(), Task.created_at.desc()).limit(1))



def _missing_capability(context: dict[str, Any], declared: set[str]) -> str | None:
    for r in context["resources"]:
        needed = registry.get(r["resource_type"]).required_capabilities(r["resource_ref"]) - declared
        if needed:
            return (f"this daemon does not declare {', '.join(sorted(needed))}, needed for the "
                    f"{r['resource_type']} resource {r['label'] or r['id']}; update Predictor X on this "
                    "machine and restart its daemon (the task was not run in place instead)")
    return None


def _within_limits(session: Session, picked: list[Any], agents: dict[str, Any]) -> list[Any]:
    """Whatever went past an agent's limit goes back to the queue (and daemons are told to look
    again). On PostgreSQL the agents' rows are locked by now, so the count sees every committed
    claim as well as ours."""
    held = dict(session.execute(_HELD, {"ids": list(agents)}).all())
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
        session.execute(_BACK, [{"b_id": t.id} for t in over])
        emit(session, over[0].workspace_id, "task_queued")
    return kept
