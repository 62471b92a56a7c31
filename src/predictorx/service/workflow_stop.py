"""A person stops a running workflow (issue 26 §7): one started automatically by the classifier
that should not have been, say. The instance's status becomes `stopped` — it takes no more
steps and dispatches no more tasks — and the stop is a row of its history (kind `stop`, the
person and their reason), so the record says who stopped it and why (`prov qaqc` reads it like a
session answer: an actor, no node of the diagram)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from ..store.schema import utcnow
from ..store.workflow_schema import WorkflowInstance, WorkflowStep
from ..workflows.engine import Actor
from ..workflows.library import Library
from .errors import Conflict, Invalid

STOPPED = "stopped"


def stop(session: Session, lib: Library, inst: WorkflowInstance, actor: Actor, reason: str) -> WorkflowStep:
    reason = reason.strip()
    if not reason:
        raise Invalid("stopping a workflow needs a reason; it is kept in the record")
    if inst.status == "suspended":  # it sits in an agent's stack: resuming it would make it active again
        raise Conflict(f"workflow {inst.process_id!r} is suspended; resume it first, then stop it")
    if inst.status != "running":
        raise Conflict(f"workflow {inst.process_id!r} is {inst.status}; only a running one is stopped")
    inst.status = STOPPED
    inst.step_count += 1
    inst.version += 1
    inst.updated_at = utcnow()
    row = WorkflowStep(seq=inst.step_count, instance_id=inst.id, status="done", process_id=inst.process_id,
                       diagram=inst.diagram, diagram_digest=lib.digests.get(inst.diagram, ""), node_id="stop",
                       node_name="stopped by a person", kind="stop", role=None, actor_type=actor.kind,
                       actor_id=actor.id, actor_name=actor.name, actor_roles=sorted(actor.roles), task_id=None,
                       outcome=STOPPED, reason=reason, computed=False, facts={}, fact_sources={}, produced={},
                       verdict="none", enforcement="advisory")
    session.add(row)
    session.flush()
    return row
