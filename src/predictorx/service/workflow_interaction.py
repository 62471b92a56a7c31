"""The interaction state per agent session on an issue (R-HAR-1): `idle` or `workflow`, exactly
one active instance, switching context suspends it — recording where it was — onto a LIFO stack,
resume pops the most recent. Persisted, so the next session knows where it was."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..store.schema import Issue, utcnow
from ..store.workflow_schema import InteractionState, WorkflowInstance
from ..workflows.library import Library
from .errors import Conflict, Invalid
from . import workflow_switch
from .workflow_refusals import StepForbidden


def _row(session: Session, issue: Issue, agent_id: str) -> InteractionState:
    row = session.scalar(select(InteractionState).where(InteractionState.issue_id == issue.id,
                                                        InteractionState.agent_id == agent_id))
    if row is not None:
        return row
    row = InteractionState(workspace_id=issue.workspace_id, issue_id=issue.id, agent_id=agent_id, state="idle",
                           stack=[])
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:
        return _row(session, issue, agent_id)
    return row


def _activity(lib: Library | None, inst: WorkflowInstance) -> list[str]:
    if lib is None or inst.status == "completed":
        return []
    from .workflow_instances import enabled_steps
    return [s["node"] for s in enabled_steps(lib, inst)]


def enter(session: Session, issue: Issue, agent_id: str, inst: WorkflowInstance, lib: Library | None) -> None:
    """Make `inst` the active workflow; a different active one is suspended onto the stack first —
    except seed scenario 3 (content work active, a platform workflow arrives): then the question
    "suspend, or file a bean?" is asked, or the agent's policy answers it (workflow_switch.py)."""
    row = _row(session, issue, agent_id)
    if row.active_instance_id == inst.id:
        return
    if row.active_instance_id:
        if workflow_switch.arrives(session, issue, row, inst, lib, MOVES):
            return  # asked, or answered "file a bean": the content work stays active
        suspend(session, issue, agent_id, lib)
    row.active_instance_id, row.state, row.updated_at = inst.id, "workflow", utcnow()
    if inst.status == "suspended":
        inst.status = "running"


def suspend(session: Session, issue: Issue, agent_id: str, lib: Library | None) -> dict[str, Any]:
    row = _row(session, issue, agent_id)
    if not row.active_instance_id:
        raise Invalid("the session is idle: there is no active workflow to suspend")
    inst = session.get(WorkflowInstance, row.active_instance_id)
    frame = {"instance": inst.id, "process": inst.process_id, "activity": _activity(lib, inst),
             "at": utcnow().isoformat()}
    if inst.status == "running":
        inst.status = "suspended"
    row.stack = [*row.stack, frame]
    row.active_instance_id, row.state, row.updated_at = None, "idle", utcnow()
    return frame


def resume(session: Session, issue: Issue, agent_id: str) -> WorkflowInstance:
    row = _row(session, issue, agent_id)
    if row.active_instance_id:
        active = session.get(WorkflowInstance, row.active_instance_id)
        raise Conflict(f"workflow {active.process_id!r} is active; suspend or finish it before resuming another")
    if not row.stack:
        raise Invalid("nothing is suspended: the stack is empty")
    *rest, top = row.stack
    inst = session.get(WorkflowInstance, top["instance"])
    row.stack = rest
    row.active_instance_id, row.state, row.updated_at = inst.id, "workflow", utcnow()
    if inst.status == "suspended":
        inst.status = "running"
    return inst


def take_step(session: Session, issue: Issue, agent_id: str, inst: WorkflowInstance) -> None:
    """One session truth (issue 24 item 3): an agent's step makes its workflow the agent's active one
    when the session is idle, and is refused while another workflow is active or a question waits."""
    row = _row(session, issue, agent_id)
    if row.pending and row.pending.get("instance") == inst.id:
        raise StepForbidden(f"workflow {inst.process_id!r} waits for an answer: {row.pending['question']} "
                            f"A person answers (`predictorx workflow answer {issue.number} suspend|bean --reason …`)")
    if row.active_instance_id == inst.id or inst.status != "running":
        return  # the active one; a suspended or completed one is refused by the step itself
    if row.active_instance_id:
        active = session.get(WorkflowInstance, row.active_instance_id)
        name = active.process_id if active else row.active_instance_id
        raise StepForbidden(f"workflow {name!r} is your active workflow on issue #{issue.number}: only its steps "
                            f"are yours now. To switch to {inst.process_id!r}, suspend {name!r} first "
                            f"(`predictorx workflow suspend {issue.number}`, MCP workflow_suspend); the step then "
                            f"makes {inst.process_id!r} active")
    row.stack = [f for f in row.stack if f.get("instance") != inst.id]
    row.active_instance_id, row.state, row.updated_at = inst.id, "workflow", utcnow()


def finished(session: Session, issue: Issue, inst: WorkflowInstance) -> None:
    """The active instance completed: back to idle, or on to the most recently suspended one."""
    rows = session.scalars(select(InteractionState).where(InteractionState.issue_id == issue.id,
                                                          InteractionState.active_instance_id == inst.id))
    for row in rows:
        row.active_instance_id, row.state, row.updated_at = None, "idle", utcnow()
        if row.stack:
            resume(session, issue, row.agent_id)


def states_of(session: Session, issue: Issue) -> list[InteractionState]:
    """Every agent's interaction state on the issue (the Workflows panel)."""
    return list(session.scalars(select(InteractionState).where(InteractionState.issue_id == issue.id)))


def view(session: Session, issue: Issue, agent_id: str) -> dict[str, Any]:
    row = session.scalar(select(InteractionState).where(InteractionState.issue_id == issue.id,
                                                        InteractionState.agent_id == agent_id))
    if row is None:
        return {"issue": issue.number, "agent_id": agent_id, "state": "idle", "active": None, "stack": [],
                "pending": None}
    active = session.get(WorkflowInstance, row.active_instance_id) if row.active_instance_id else None
    return {"issue": issue.number, "agent_id": agent_id, "state": row.state,
            "active": {"instance": active.id, "process": active.process_id, "status": active.status} if active else None,
            "stack": list(reversed(row.stack)),  # most recent first: the one resume takes
            "pending": row.pending}


MOVES = workflow_switch.Moves(suspend=suspend, resume=resume)
