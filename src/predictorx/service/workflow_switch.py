"""Seed scenario 3 (issue 24 item 3): content work is in progress and a platform change arrives.
The seed asks the user "suspend the content work and take it now, or file a bean for later?" —
never suspends silently. The question waits on the agent's interaction state (`pending`) until a
person answers, unless the agent's policy answers it: an ODRL rule on the content workflow's
diagram for the action `switch` (workflows/odrl.py) — permitted: suspend; prohibited: file a bean;
unknown (the shipped policies say nothing): ask. The answer is a row of the content instance's
history (kind `session`, node `switch:<process>`), so the record says who decided and why.

Content workflows and platform workflows are the seed's (processes below); the sets are data here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Issue, utcnow
from ..store.workflow_schema import InteractionState, WorkflowInstance, WorkflowStep
from ..workflows.engine import Actor
from ..workflows.library import Library
from ..workflows.odrl import DENY, PERMIT, Request, evaluate
from .errors import NotFound

CONTENT = frozenset({"authoring-a-paper", "authoring-a-document", "content-lifecycle", "document-ingestion",
                     "draft-to-publication", "evidence-retrieval"})
PLATFORM = frozenset({"feature-request", "bug-triage"})
ANSWERS = ("suspend", "bean")


@dataclass(frozen=True)
class Moves:
    """The interaction state's own moves, handed in by workflow_interaction.py (no import cycle)."""
    suspend: Callable[..., Any]
    resume: Callable[..., Any]


def question(active: WorkflowInstance, inst: WorkflowInstance) -> str:
    return (f"A platform change ({inst.process_id}) arrived while content work ({active.process_id}) is in "
            f"progress: suspend {active.process_id} and take the change now, or file a bean for later?")


def arrives(session: Session, issue: Issue, row: InteractionState, inst: WorkflowInstance,
            lib: Library | None, moves: Moves) -> bool:
    """Called before `inst` would suspend the active workflow. True when scenario 3 holds and it
    is handled here (asked, or answered by the agent's policy)."""
    active = session.get(WorkflowInstance, row.active_instance_id)
    if active is None or active.process_id not in CONTENT or inst.process_id not in PLATFORM:
        return False
    row.pending = {"question": question(active, inst), "instance": inst.id, "process": inst.process_id,
                   "active": active.id, "active_process": active.process_id, "asked_at": utcnow().isoformat()}
    agent = session.get(Agent, row.agent_id)
    verdict, sentence = _policy(lib, active, agent)
    if verdict in (PERMIT, DENY) and agent is not None:
        actor = Actor("agent", agent.id, agent.name, frozenset({"agent"}))
        decide(session, lib, issue, row, "suspend" if verdict == PERMIT else "bean",
               f"the agent's policy: {sentence}", actor, moves, verdict)
    return True


def _policy(lib: Library | None, active: WorkflowInstance, agent: Agent | None) -> tuple[str, str]:
    model = lib.model_of(active.process_id) if lib else None
    if lib is None or model is None or agent is None:
        return "unknown", "no policy"
    refs = lib.policy_refs.get(model.diagram, {})
    policies = [lib.policies[refs[r]] for r in [*model.policies, *model.fixed] if refs.get(r) in lib.policies]
    if not policies:
        return "unknown", "no policy"
    v = evaluate(policies, Request("agent", agent.name, frozenset({"agent"}), "switch", model.diagram, "",
                                   model.id, None))
    return v.value, v.sentence()


def decide(session: Session, lib: Library | None, issue: Issue, row: InteractionState, answer: str,
           reason: str | None, actor: Actor, moves: Moves, verdict: str = "none") -> dict[str, Any]:
    """Apply the answer to the pending question and record it in the content instance's history.
    `moves`: the interaction state's suspend and resume (workflow_interaction.py, which calls this)."""
    from . import beans as bean_svc

    pending: dict[str, Any] = row.pending or {}
    active = session.get(WorkflowInstance, pending["active"])
    inst = session.get(WorkflowInstance, pending["instance"])
    if active is None or inst is None:
        row.pending = None
        raise NotFound("the workflows of that question are gone; nothing to answer")
    row.pending = None
    produced: dict[str, str] = {}
    if answer == "suspend":
        if row.active_instance_id == active.id:
            moves.suspend(session, issue, row.agent_id, lib)
        row.active_instance_id, row.state, row.updated_at = inst.id, "workflow", utcnow()
    else:
        bean, _ = bean_svc.create(session, issue, f"Platform change: {inst.process_id} (filed during "
                                  f"{active.process_id})", body=pending["question"], by=actor.label)
        produced["bean"] = bean.id
        if session.scalar(select(func.count()).select_from(WorkflowStep).where(WorkflowStep.instance_id == inst.id)) == 0:
            session.delete(inst)  # the bean carries the request; `workflow start` brings it back later
        if row.active_instance_id is None and row.stack:
            moves.resume(session, issue, row.agent_id)
    active.step_count += 1
    session.add(WorkflowStep(
        seq=active.step_count, instance_id=active.id, status="done", process_id=active.process_id,
        diagram=active.diagram, diagram_digest=(lib.digests.get(active.diagram, "") if lib else ""),
        node_id=f"switch:{pending['process']}", node_name=pending["question"][:500], kind="session", role=None,
        actor_type=actor.kind, actor_id=actor.id, actor_name=actor.name, actor_roles=sorted(actor.roles),
        outcome=answer, reason=reason, computed=False, facts={}, fact_sources={}, produced=produced,
        verdict=verdict, enforcement="advisory"))
    session.flush()
    return {"answer": answer, "reason": reason, "bean": produced.get("bean"), "question": pending["question"]}
