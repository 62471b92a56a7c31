"""A daemon's finish of a task it holds, in SQLAlchemy Core (R-SC-2, issue 14): one conditional
`UPDATE task … WHERE id = … AND daemon_id = … AND status IN (held) RETURNING …` that checks, locks
and ends the task at once, instead of loading the task and the daemon as ORM objects, changing
them and flushing. On PostgreSQL its RETURNING also says whether the agent still has queued
tasks (which its freed slot may now let run).

Only the common case takes this path: the task is held by this daemon (dispatched, waiting for its
folder or running), in this daemon's workspace, with no follow-up request waiting on it. Anything
else — another daemon's or workspace's task, a task cancelled or swept meanwhile, a follow-up to
queue — answers None and `tasks.finish` takes its ORM path, whose answers and errors are the rules.
The statements are built once per combination of the fields a report carries.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, exists, func, select, update
from sqlalchemy.engine import Row
from sqlalchemy.orm import Session

from ..store import direct
from ..store.schema import HOLDING_STATUSES as HOLDING, TASK_ROW_COLUMNS, Agent, Daemon, Issue, Task, one_of, utcnow

_task = Task.__table__
_issue = Issue.__table__
_daemon = Daemon.__table__
_agent = Agent.__table__
_other = _task.alias("other")

_daemon_here = exists(select(_daemon.c.id).where(_daemon.c.id == bindparam("f_daemon"),
                                                 _daemon.c.workspace_id == _task.c.workspace_id)
                      .correlate(_task))
# On PostgreSQL in the RETURNING; SQLite's RETURNING names columns without their table, which a
# correlated subquery there cannot tell apart, so it is one more (in-process) SELECT there.
_queued_left = exists(select(_other.c.id).where(_other.c.agent_id == _task.c.agent_id, _other.c.status == "queued")
                      .correlate(_task)).label("agent_has_queued")
# Whose agent it is: a task queued for it wakes only its owner's daemons (server/hub.py).
_owner_of_agent = (select(_agent.c.owner_id).where(_agent.c.id == _task.c.agent_id)
                   .correlate(_task).scalar_subquery().label("agent_owner_id"))
# SQLite: the agent's owner if it has queued tasks (no row: it has none).
_QUEUED = select(_agent.c.owner_id).where(_agent.c.id == bindparam("agent"), exists(
    select(_task.c.id).where(_task.c.agent_id == bindparam("agent"), _task.c.status == "queued")))

#: The optional fields a report may carry, in the order of a statement's key.
FIELDS = ("result", "session_id", "failure_reason", "branch_name", "review")
_statements: dict[tuple[bool, ...], Any] = {}


def _statement(key: tuple[bool, ...]):
    stmt = _statements.get(key)
    if stmt is None:
        postgres, completed, *given = key
        values: dict[str, Any] = {"status": bindparam("f_status"), "active_key": None, "lease_expires_at": None,
                                  "finished_at": bindparam("f_now"), "wait_reason": None,
                                  "updated_at": bindparam("f_now")}  # (else an onupdate computed per execution)
        if completed:  # a run reported done without a "running" report still started
            values["started_at"] = func.coalesce(_task.c.started_at, _task.c.dispatched_at)
        for name, present in zip(FIELDS, given):
            if present:
                values[name] = bindparam(f"f_{name}", type_=_task.c[name].type)
        stmt = (update(_task)
                .where(_task.c.id == bindparam("f_id"), _task.c.daemon_id == bindparam("f_daemon"),
                       one_of(_task.c.status, HOLDING), _task.c.pending_prompt.is_(None), _daemon_here)
                .values(**values)
                .returning(*TASK_ROW_COLUMNS, *([_queued_left, _owner_of_agent] if postgres else [])))
        if postgres and completed:
            stmt = _with_issue_moved(stmt)
        _statements[key] = stmt
    return stmt


def _with_issue_moved(finish):
    """PostgreSQL: the finish and the issue's move to in_review in one statement (a data-modifying
    WITH), one round trip fewer on every completed task. The move is the one `tasks._move_issue`
    makes: only from in_progress, so never past a person's choice."""
    done = finish.cte("done")
    move = (update(_issue).where(_issue.c.id == done.c.issue_id, one_of(_issue.c.status, ("in_progress",)))
            .values(status="in_review", updated_at=bindparam("f_now")).cte("moved"))
    return select(done).add_cte(move)


def finish_held(session: Session, daemon_id: str, task_id: str, status: str,
                fields: dict[str, Any]) -> tuple[Row, bool, str | None, bool] | None:
    """End the task if this daemon simply holds it: (the row as it is now, whether its agent has
    queued tasks, the agent's owner, whether the issue's move to in_review was made too), or None
    (see the module doc). `fields`: the report's optional fields to set, already normalised (a
    field absent is left as it is)."""
    postgres = session.bind.dialect.name == "postgresql"
    given = tuple(name in fields for name in FIELDS)
    params = {"f_id": task_id, "f_daemon": daemon_id, "f_status": status, "f_now": utcnow()}
    for name, present in zip(FIELDS, given):
        if present:
            params[f"f_{name}"] = fields[name]
    conn = session.connection()  # a Core statement: the ORM's execution layer adds nothing
    row = direct.first(conn, _statement((postgres, status == "completed", *given)), params)
    if row is None:
        return None
    if postgres:
        return row, bool(row.agent_has_queued), row.agent_owner_id, status == "completed"
    queued = conn.execute(_QUEUED, {"agent": row.agent_id}).first()
    return row, queued is not None, queued[0] if queued is not None else None, False
