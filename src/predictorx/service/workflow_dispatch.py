"""An agent-lane step becomes a platform task for the agent bound to that lane's role (R-HAR-3).

After every change of an instance, each enabled step whose role an agent holds queues a task for
that agent on the issue — unless it already has one active (the running task carries on; the
task-start sweep names the step, its skills and what to produce). A step a strict policy would
refuse that agent is not dispatched to it: a task that can only be refused is noise.

A change made with a task token (`by_agent`: its agent; the text may come from a prompt
injection) dispatches steps only to agents of that agent's owner, as its mentions do
(service/mentions.py, R-SEC-6): another person's agent's step stays enabled and is dispatched by
the next change a person makes."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Issue
from ..store.workflow_schema import InteractionState, WorkflowInstance
from ..workflows.library import Library
from ..workflows.odrl import PERMIT, Request, evaluate
from . import tasks
from .mentions import may_ask
from .workflow_roles import agents_for, roles_of


def after_change(session: Session, lib: Library, issue: Issue, inst: WorkflowInstance | None, *,
                 by_agent: Agent | None = None) -> list[str]:
    if inst is None or inst.status != "running":
        return []
    from ..workflows.engine import Run

    queued = []
    waiting = {(st.pending or {}).get("instance") for st in session.scalars(
        select(InteractionState).where(InteractionState.issue_id == issue.id, InteractionState.pending.is_not(None)))}
    for step in Run.load(lib, inst.process_id, inst.state, inst.facts).enabled():
        if not step.role:
            continue
        policies = lib.policies_for(step.process, step.node)
        strict = step.process.enforcement_of(step.node) == "strict"
        for agent in agents_for(session, issue, step.role):
            if by_agent is not None and not may_ask(by_agent, agent):
                continue
            if inst.id in waiting:  # scenario 3: its steps wait for a person's answer (workflow_switch.py)
                continue
            if strict and policies:
                req = Request("agent", agent.name, roles_of(session, lib, issue, "agent", agent.id),
                              "pass" if step.kind == "gate" else "complete", step.process.diagram, step.node.id,
                              step.process.id, step.role)
                if evaluate(policies, req).value != PERMIT:
                    continue
            queued.append(tasks.enqueue(session, issue, agent).id)
    return queued
