"""Which enabled steps the issue page offers a person (issue 26 §7): only those the completion
would not refuse whatever they typed — the engine's role check (Run.find), the strict policies
(workflow_instances.policy_verdict) and the commit boundary when no agent's run has delivered a
commit yet — asked of the same functions `complete` asks, so the page never shows a "Complete
step" button that is always refused. What the person types (an outcome, facts, a commit) may
still be refused; that refusal is shown next to the form."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from ..store.schema import Issue
from ..store.workflow_schema import WorkflowInstance
from ..workflows.engine import Actor, StepRefused
from ..workflows.library import Library
from . import workflow_instances as inst_svc
from .workflow_boundary import delivered


def refusal(session: Session, lib: Library, issue: Issue, inst: WorkflowInstance, actor: Actor,
            node_id: str) -> str | None:
    """Why `actor` cannot take enabled step `node_id` of `inst` now (None: it is theirs to take)."""
    if inst.status != "running":
        return f"the workflow is {inst.status}"
    run = inst_svc.load_run(lib, inst)
    try:
        step = run.find(node_id, actor)
    except StepRefused as e:
        return str(e)
    _verdict, refused = inst_svc.policy_verdict(lib, step, actor)
    if refused is not None:
        return refused
    if step.node.commit_boundary and not delivered(session, issue, actor.id if actor.kind == "agent" else None):
        return (f"{step.describe()} is at the commit boundary and no agent's run on issue #{issue.number} has "
                "delivered a commit yet; the agent's task completes it")
    return None


def offers(session: Session, lib: Library, issue: Issue, inst: WorkflowInstance, actor: Actor,
           enabled: list[dict[str, Any]]) -> dict[str, str | None]:
    """node id → why the actor may not take it (None: offered)."""
    return {e["node"]: refusal(session, lib, issue, inst, actor, e["node"]) for e in enabled}
