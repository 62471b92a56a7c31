"""A run's usage reported by its daemon, and the hard budgets it may reach (issue 27 §1–2): the
one use case behind the message upload's and the finish's `usage`.

While the run streams, each report is recorded (service/usage.py) and the hard budgets of its
workspace, project and agent are checked with it counted; one reached stops the run: the task is
cancelled at once with the budget named as the reason (as a person's cancel: its daemon is told and
ends the agent; the messages it still sends are kept) and the upload is answered with `stop`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from ..store.schema import HOLDING_STATUSES, Task
from . import budgets, tasks, usage
from ..protocol import Event
from .events import emit


def report(session: Session, task: Task, reported: dict[str, Any] | None, *, final: bool = False) -> str | None:
    """Record the run's usage; the reason the run must stop now, or None."""
    if not reported:
        return None
    row = usage.record(session, task, reported, final=final)
    if row is None:
        return None
    emit(session, task.workspace_id, Event.TASK_USAGE, task_id=task.id)  # the run's page shows it live
    if final or task.status not in HOLDING_STATUSES:
        return None
    found = budgets.blocks(session, task.workspace_id, project_id=task.project_id, agent_id=task.agent_id)
    reason = found.reason_for(task.project_id, task.agent_id) if found else None
    if reason:
        tasks.cancel(session, task, reason)
    return reason
