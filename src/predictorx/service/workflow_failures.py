"""An instance the engine could not advance within its budget (workflows/engine.py `Budget`):
the request that set it off answers 409 with the engine's sentence instead of never returning,
and the instance is failed — its status `failed`, the attempt a `failed` row of its history with
the sentence as reason (issue 24 item 2). Nothing else of that request is kept: its transaction
is rolled back and this is written in one of its own, like a refused step's record."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from ..store.schema import utcnow
from ..store.workflow_schema import WorkflowInstance, WorkflowStep
from .errors import Conflict


class WorkflowFailed(Conflict):
    """The engine overran its budget; `record` is the step that set it off (None at start)."""

    def __init__(self, message: str, record: dict[str, Any] | None = None):
        super().__init__(message)
        self.record = record


def fail(session: Session, record: dict[str, Any], sentence: str) -> WorkflowInstance | None:
    """Mark the instance failed and keep the attempt (the caller moves its agents' sessions on, as
    on completion: workflow_interaction.finished)."""
    inst = session.get(WorkflowInstance, record["instance_id"])
    if inst is None:
        return None
    inst.status = "failed"
    inst.step_count += 1
    inst.version += 1
    inst.updated_at = utcnow()
    session.add(WorkflowStep(seq=inst.step_count, **{**record, "status": "failed", "reason": sentence}))
    session.flush()
    return inst
