"""One task as `GET /api/tasks/{id}` answers it, read with one Core statement (issue 30).

A run's page, its agent and the benches poll this answer every fraction of a second while a run
goes on; it loaded the task, its agent and its issue as three ORM rows (each a `Session.get`: a
statement built and keyed, a row made into an object), about half of the request's server CPU.
Now the task's shown columns, its agent's name and its issue's number come in one statement built
once; the agent's row is loaded only for a queued task, whose wait reason is computed now
(service/runnability.py).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from ..store import direct
from ..store.schema import Agent, Issue, Task
from . import runnability, serialize
from .errors import NotFound

#: The task's columns its answer shows (serialize.task) and `context` (a task's or daemon's own
#: read); not `review` and the other columns no answer shows, which may be large.
COLUMNS = ("id", "workspace_id", "issue_id", "agent_id", "project_id", "status", "wait_reason", "failure_reason",
           "branch_name", "result", "session_id", "prompt", "daemon_id", "runtime_id", "attempt",
           "cancel_requested", "pull_request_id", "permission_answers", "created_at", "dispatched_at",
           "started_at", "finished_at", "context")

_task: Any = Task.__table__
_agent: Any = Agent.__table__
_issue: Any = Issue.__table__
_VIEW = (select(*(_task.c[name] for name in COLUMNS), _agent.c.name.label("agent_name"),
                _issue.c.number.label("issue_number"))
         .select_from(_task.outerjoin(_agent, _agent.c.id == _task.c.agent_id)
                      .outerjoin(_issue, _issue.c.id == _task.c.issue_id))
         .where(_task.c.id == bindparam("v_task")))


def read(session: Session, workspace_id: str, task_id: str) -> Any:
    """The task's row (attributes as a Task's, plus `agent_name` and `issue_number`); NotFound as
    service/tasks.get_task says it, for a task of another workspace too (R-SEC-2)."""
    row = direct.first(session.connection(), _VIEW, {"v_task": task_id})
    if row is None or row.workspace_id != workspace_id:
        raise NotFound(f"task {task_id!r} not found; `predictorx issue runs <issue>` lists an issue's tasks")
    return row


def answer(session: Session, row: Any) -> dict[str, Any]:
    """serialize.task's answer, with the wait reason as it is now."""
    out = serialize.task(row, row.agent_name, row.issue_number)
    agent = session.get(Agent, row.agent_id) if row.status == "queued" else None  # (only a queued task's reason uses it)
    out["wait_reason"] = runnability.queued_reason(session, row, agent)
    return out
