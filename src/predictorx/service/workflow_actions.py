"""What a person or an agent does to an issue's workflows — start one, take a step, suspend and
resume — one use case each, called alike by the API route (server/routes/workflows.py) and the
issue page (server/web/workflows.py), so a refusal, a strict policy and the record are the same.

People act with user tokens (people lanes, judgements); an agent acts with its task token, only
on its task's issue, as the agent of that task. Who may take which step is the engine's answer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Issue
from ..store.workflow_schema import InteractionState, WorkflowInstance
from ..workflows.engine import Actor
from ..workflows.library import Library, active_library
from ..workflows.loader import DiagramError
from . import auth
from . import issues as issue_svc
from . import workflow_instances as inst_svc
from . import workflow_interaction as interaction
from . import workflow_stop as stopping
from . import workflow_switch as switch
from .errors import Forbidden, Invalid, NotFound
from .transactions import Transactions
from .workflow_dispatch import after_change
from .workflow_failures import fail


def library() -> Library:
    try:
        return active_library()
    except DiagramError as e:  # a broken PREDICTORX_PROCESSES folder: say so, never a 500
        raise Invalid(f"the workflow library does not load: {e}") from None


issue_for = issue_svc.issue_for  # the issue, if the principal may act on it


def actor_for(s: Session, principal: auth.Principal, issue: Issue, lib: Library | None) -> tuple[Actor, str | None]:
    """The acting agent (task token) or person (user token), with the roles it holds on the issue
    (none looked up without a library: who it is, for attribution)."""
    if principal.kind == "task":
        task, agent = auth.task_of(s, principal), auth.agent_of(s, principal)
        if task is None or agent is None:
            raise Forbidden("this task token's task or agent is gone")
        roles = inst_svc.actor_roles(s, lib, issue, "agent", agent.id) if lib else frozenset()
        return Actor("agent", agent.id, agent.name, roles), task.id
    if principal.kind == "user":
        user = auth.user_of(s, principal)
        if user is None:
            raise Forbidden("this token's person is gone")
        roles = inst_svc.actor_roles(s, lib, issue, "person", user.id) if lib else frozenset()
        return Actor("person", user.id, user.name, roles), None
    raise Forbidden("workflow steps are taken by people or by agents in their task, not by daemons")


def acting_agent(s: Session, principal: auth.Principal) -> Agent | None:
    """The agent a task token acts for (None for a person): what it changes dispatches workflow
    steps only to agents of that agent's owner (service/workflow_dispatch.py, R-SEC-6)."""
    if principal.kind != "task":
        return None
    agent = auth.agent_of(s, principal)
    if agent is None:
        raise Forbidden("this task token's task or agent is gone")
    return agent


def agent_id_for(s: Session, principal: auth.Principal, workspace_id: str, issue: Issue, ref: str | None) -> str:
    """Whose interaction state: the task's agent, a named agent, or the issue's assigned agent."""
    if principal.kind == "task":
        task = auth.task_of(s, principal)
        if task is None:
            raise Forbidden("this task token's task is gone")
        return task.agent_id
    if ref:
        from .agents import find_agent
        return find_agent(s, workspace_id, ref).id
    if issue.assignee_type == "agent" and issue.assignee_id:
        return issue.assignee_id
    raise Invalid("the issue is not assigned to an agent; name one with agent=")


def view(lib: Library, issue: Issue, inst: WorkflowInstance) -> dict[str, Any]:
    out = inst_svc.instance_dict(inst, issue)
    out["enabled"] = inst_svc.enabled_steps(lib, inst) if inst.status == "running" else []
    return out


def start(tx: Transactions, principal: auth.Principal, workspace_id: str, ref: str, process: str) -> dict[str, Any]:
    """Start `process` on the issue (or answer the running one, `created` false); a new instance
    enters the agent's interaction state and dispatches its first steps."""
    lib = library()
    with tx.write() as s:
        issue = issue_for(s, principal, workspace_id, ref)
        inst, created = inst_svc.start(s, lib, issue, process)
        if created:
            agent_id = agent_id_for(s, principal, workspace_id, issue, None) if (
                principal.kind == "task" or issue.assignee_type == "agent") else None
            if agent_id:
                interaction.enter(s, issue, agent_id, inst, lib)
            after_change(s, lib, issue, inst, by_agent=acting_agent(s, principal))
        out = view(lib, issue, inst)
        out["created"] = created
        asked = [st.pending for st in interaction.states_of(s, issue) if (st.pending or {}).get("instance") == inst.id]
        out["question"] = asked[0] if asked else None  # seed scenario 3: it waits for this answer
        return out


def complete(tx: Transactions, principal: auth.Principal, workspace_id: str, ref: str, process: str,
             step: inst_svc.Completion) -> dict[str, Any]:
    """Take an enabled step (or pass a gate) as the caller. A refused step changes nothing, and
    the refused attempt is then recorded in a transaction of its own (qaqc reports it)."""
    lib = library()
    try:
        with tx.write() as s:
            issue = issue_for(s, principal, workspace_id, ref)
            inst = inst_svc.get_instance(s, issue, process)
            actor, task_id = actor_for(s, principal, issue, lib)
            if actor.kind == "agent":  # one session truth: the step's workflow is (or becomes) the active one
                interaction.take_step(s, issue, actor.id, inst)
            row, enabled = inst_svc.complete(s, lib, issue, inst, actor, dataclasses.replace(step, task_id=task_id))
            if inst.status == "completed":
                interaction.finished(s, issue, inst)
            if lib.process(row.process_id).nodes[row.node_id].summary:
                from .workflow_summary import leave
                leave(s, issue, inst, row, enabled)
            after_change(s, lib, issue, inst, by_agent=acting_agent(s, principal))
            return {"step": inst_svc.step_dict(row), "instance": inst_svc.instance_dict(inst, issue),
                    "enabled": enabled}
    except inst_svc.WorkflowFailed as e:
        if e.record:  # the instance is failed in a transaction of its own, with the sentence
            with tx.write() as s:
                failed = fail(s, e.record, str(e))
                if failed is not None and (its_issue := s.get(Issue, failed.issue_id)) is not None:
                    interaction.finished(s, its_issue, failed)
        raise
    except inst_svc.StepForbidden as e:
        if e.record:  # the refused attempt is part of the record, repeats counted
            with tx.write() as s:
                counted = inst_svc.record_refusal(s, e.record)
            if counted:
                raise inst_svc.StepForbidden(f"{e}; {counted}") from None
        raise


def exit_instance(tx: Transactions, principal: auth.Principal, workspace_id: str, ref: str, process: str,
                  exit_id: str, reason: str | None) -> dict[str, Any]:
    """Leave a workflow by a declared exit (feature-request: `defer`, the user defers the remaining
    work), by a holder of the exit's role, with a reason; the record keeps it with the beans left open,
    and the agent's suspended work resumes (seed: "on exit, resume the suspended content work")."""
    lib = library()
    reason = (reason or "").strip()
    if not reason:
        raise Invalid(f"exit {exit_id!r} needs a reason")
    with tx.write() as s:
        issue = issue_for(s, principal, workspace_id, ref)
        inst = inst_svc.get_instance(s, issue, process)
        actor, task_id = actor_for(s, principal, issue, lib)
        row = inst_svc.exit_instance(s, lib, issue, inst, actor, exit_id, reason, task_id)
        interaction.finished(s, issue, inst)
        return {"step": inst_svc.step_dict(row), "instance": inst_svc.instance_dict(inst, issue), "enabled": []}


def stop(tx: Transactions, principal: auth.Principal, workspace_id: str, ref: str, process: str,
         reason: str | None) -> dict[str, Any]:
    """A person stops a running workflow with a reason (workflow_stop.py); the agent whose active
    workflow it was goes back to idle, or on to the one it suspended."""
    if principal.kind != "user":
        raise Forbidden("a person stops a workflow; an agent leaves one by a declared exit")
    lib = library()
    with tx.write() as s:
        issue = issue_for(s, principal, workspace_id, ref)
        inst = inst_svc.get_instance(s, issue, process)
        actor, _ = actor_for(s, principal, issue, lib)
        row = stopping.stop(s, lib, inst, actor, reason or "")
        interaction.finished(s, issue, inst)
        return {"step": inst_svc.step_dict(row), "instance": inst_svc.instance_dict(inst, issue), "enabled": []}


def suspend(tx: Transactions, principal: auth.Principal, workspace_id: str, ref: str,
            agent: str | None) -> dict[str, Any]:
    lib = library()
    with tx.write() as s:
        issue = issue_for(s, principal, workspace_id, ref)
        aid = agent_id_for(s, principal, workspace_id, issue, agent)
        interaction.suspend(s, issue, aid, lib)
        return interaction.view(s, issue, aid)


def resume(tx: Transactions, principal: auth.Principal, workspace_id: str, ref: str,
           agent: str | None) -> dict[str, Any]:
    """Resume the agent's most recently suspended workflow and dispatch its enabled steps."""
    lib = library()
    with tx.write() as s:
        issue = issue_for(s, principal, workspace_id, ref)
        aid = agent_id_for(s, principal, workspace_id, issue, agent)
        inst = interaction.resume(s, issue, aid)
        after_change(s, lib, issue, inst, by_agent=acting_agent(s, principal))
        return interaction.view(s, issue, aid)


def answer_switch(tx: Transactions, principal: auth.Principal, workspace_id: str, ref: str, agent_ref: str | None,
                  choice: str, reason: str | None) -> dict[str, Any]:
    """A person answers the pending question (an agent relays it as a comment; the answer is theirs)."""
    if choice not in switch.ANSWERS:
        raise Invalid(f"answer suspend (take the platform change now) or bean (file it for later), not {choice!r}")
    if principal.kind != "user":
        raise Forbidden("the person answers this question, or the agent's policy does; an agent cannot answer it")
    lib = library()
    with tx.write() as s:
        issue = issue_for(s, principal, workspace_id, ref)
        aid = agent_id_for(s, principal, workspace_id, issue, agent_ref)
        row = s.scalar(select(InteractionState).where(InteractionState.issue_id == issue.id,
                                                      InteractionState.agent_id == aid))
        if row is None or not row.pending:
            raise NotFound(f"issue #{issue.number} has no question waiting for an answer")
        actor, _ = actor_for(s, principal, issue, None)
        taken = s.get(WorkflowInstance, row.pending["instance"])
        out = switch.decide(s, lib, issue, row, choice, (reason or "").strip() or None, actor, interaction.MOVES)
        if choice == "suspend" and taken is not None:
            after_change(s, lib, issue, taken)
        return {**out, "state": interaction.view(s, issue, aid)}
