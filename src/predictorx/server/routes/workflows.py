"""Workflow instances on an issue, their steps, the interaction state and the record (SPEC §10).

People act with user tokens (people lanes, judgements); an agent acts with its task token, only
on its task's issue, as the agent of that task. Who may take which step is the engine's answer.
"""

from __future__ import annotations

from typing import Any, Optional

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from ...service import workflow_instances as inst_svc
from ...service import workflow_interaction as interaction
from ...workflows import prov
from ...service import workflow_record as record_svc
from ...service.workflow_dispatch import after_change
from ...workflows.engine import Actor
from ...workflows.library import Library, active_library
from ...workflows.loader import DiagramError
from ...service import auth
from ...service import issues as issue_svc
from ...service.errors import Forbidden, Invalid
from ...store.schema import Agent, Issue
from ..deps import Caller, get_caller, get_state
from ..state import AppState

router = APIRouter(tags=["workflows"])

Facts = dict[str, Any]


class StartIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    process: str = Field(min_length=1, max_length=200)


class StepIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step: str = Field(min_length=1, max_length=200, description="Node id (or engine task id) of an enabled step.")
    facts: dict[str, str | int | float | bool | None] = Field(default_factory=dict, max_length=100)
    outcome: Optional[str] = Field(default=None, max_length=200)
    reason: Optional[str] = Field(default=None, max_length=10_000)
    produced: dict[str, str] = Field(default_factory=dict, max_length=50)
    if_version: Optional[int] = Field(default=None, ge=1)


class AgentRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent: Optional[str] = Field(default=None, max_length=200)


def library() -> Library:
    try:
        return active_library()
    except DiagramError as e:  # a broken PREDICTORX_PROCESSES folder: say so, never a 500
        raise Invalid(f"the workflow library does not load: {e}") from None


def issue_for(s, caller: Caller, ref: str) -> Issue:
    issue = issue_svc.get_issue(s, caller.workspace_id, ref)
    if auth.may_act_on_issue(s, caller.principal, issue.id):
        return issue
    raise Forbidden("this token may not act on that issue")


def actor_for(s, caller: Caller, issue: Issue, lib: Library | None) -> tuple[Actor, str | None]:
    """The acting agent (task token) or person (user token), with the roles it holds on the issue
    (none looked up without a library: who it is, for attribution)."""
    p = caller.principal
    if p.kind == "task":
        task, agent = auth.task_of(s, p), auth.agent_of(s, p)
        roles = inst_svc.actor_roles(s, lib, issue, "agent", agent.id) if lib else frozenset()
        return Actor("agent", agent.id, agent.name, roles), task.id
    if p.kind == "user":
        user = auth.user_of(s, p)
        roles = inst_svc.actor_roles(s, lib, issue, "person", user.id) if lib else frozenset()
        return Actor("person", user.id, user.name, roles), None
    raise Forbidden("workflow steps are taken by people or by agents in their task, not by daemons")


def acting_agent(s, caller: Caller) -> Agent | None:
    """The agent a task token acts for (None for a person): what it changes dispatches workflow
    steps only to agents of that agent's owner (service/workflow_dispatch.py, R-SEC-6)."""
    if caller.principal.kind != "task":
        return None
    agent = auth.agent_of(s, caller.principal)
    if agent is None:
        raise Forbidden("this task token's task or agent is gone")
    return agent


def _agent_id(s, caller: Caller, issue: Issue, ref: str | None) -> str:
    """Whose interaction state: the task's agent, a named agent, or the issue's assigned agent."""
    p = caller.principal
    if p.kind == "task":
        return auth.task_of(s, p).agent_id
    if ref:
        from ...service.agents import find_agent
        return find_agent(s, caller.workspace_id, ref).id
    if issue.assignee_type == "agent" and issue.assignee_id:
        return issue.assignee_id
    raise Invalid("the issue is not assigned to an agent; name one with agent=")


def _view(s, lib: Library, issue: Issue, inst) -> dict:
    out = inst_svc.instance_dict(inst, issue)
    out["enabled"] = inst_svc.enabled_steps(lib, inst) if inst.status == "running" else []
    return out


@router.get("/api/workflows/processes")
def processes(caller: Caller = Depends(get_caller)) -> list[dict]:
    lib = library()
    return [{"id": m.id, "name": m.name, "diagram": m.diagram, "enforcement": m.enforcement,
             "lanes": m.lanes} for m in sorted(lib.processes.values(), key=lambda m: m.id)]


@router.get("/api/issues/{ref}/workflows")
def list_instances(ref: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> list[dict]:
    lib = library()
    with state.read() as s:
        issue = issue_for(s, caller, ref)
        return [_view(s, lib, issue, i) for i in inst_svc.list_instances(s, issue)]


@router.post("/api/issues/{ref}/workflows")
def start(ref: str, body: StartIn, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    lib = library()
    with state.write() as s:
        issue = issue_for(s, caller, ref)
        inst, created = inst_svc.start(s, lib, issue, body.process)
        if created:
            agent_id = _agent_id(s, caller, issue, None) if (caller.principal.kind == "task" or
                                                           issue.assignee_type == "agent") else None
            if agent_id:
                interaction.enter(s, issue, agent_id, inst, lib)
            after_change(s, lib, issue, inst, by_agent=acting_agent(s, caller))
        out = _view(s, lib, issue, inst)
        out["created"] = created
        return out


@router.get("/api/issues/{ref}/workflows/{process}")
def show(ref: str, process: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    lib = library()
    with state.read() as s:
        issue = issue_for(s, caller, ref)
        inst = inst_svc.get_instance(s, issue, process)
        out = _view(s, lib, issue, inst)
        out["history"] = [inst_svc.step_dict(r) for r in inst_svc.history(s, inst)]
        return out


@router.post("/api/issues/{ref}/workflows/{process}/steps")
def complete(ref: str, process: str, body: StepIn, caller: Caller = Depends(get_caller),
             state: AppState = Depends(get_state)) -> dict:
    lib = library()
    try:
        with state.write() as s:
            issue = issue_for(s, caller, ref)
            inst = inst_svc.get_instance(s, issue, process)
            actor, task_id = actor_for(s, caller, issue, lib)
            row, enabled = inst_svc.complete(s, lib, issue, inst, actor, inst_svc.Completion(
                body.step, dict(body.facts), body.outcome, body.reason, dict(body.produced), body.if_version, task_id))
            if inst.status == "completed":
                interaction.finished(s, issue, inst)
            after_change(s, lib, issue, inst, by_agent=acting_agent(s, caller))
            return {"step": inst_svc.step_dict(row), "instance": inst_svc.instance_dict(inst, issue),
                    "enabled": enabled}
    except inst_svc.StepForbidden as e:
        if e.record:  # the refused attempt is part of the record (qaqc reports it), repeats counted
            with state.write() as s:
                counted = inst_svc.record_refusal(s, e.record)
            if counted:
                raise inst_svc.StepForbidden(f"{e}; {counted}") from None
        raise


@router.get("/api/issues/{ref}/workflows/{process}/prov")
def prov_document(ref: str, process: str, caller: Caller = Depends(get_caller),
                  state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        issue = issue_for(s, caller, ref)
        inst = inst_svc.get_instance(s, issue, process)
        return prov.document(inst_svc.instance_dict(inst, issue),
                             [inst_svc.step_dict(r) for r in inst_svc.history(s, inst)])


@router.get("/api/workflows/record")
def record(issue: Optional[str] = Query(default=None, max_length=50),
           cursor: Optional[str] = Query(default=None, max_length=100,
                                         description="The `next` of the page before; none for the first page."),
           limit: int = Query(default=record_svc.DEFAULT_LIMIT, ge=1, le=record_svc.MAX_LIMIT,
                              description="At most this many steps (and instances) on the page."),
           caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    """Every instance with its history (what `prov qaqc` checks), a page at a time: follow `next`
    until it is null; an instance cut at the end of a page carries on at the start of the next."""
    if caller.principal.kind != "user":
        raise Forbidden("the record is for people; an agent reads its own instance")
    with state.read() as s:
        issue_id = issue_svc.get_issue(s, caller.workspace_id, issue).id if issue else None
        return record_svc.page(s, caller.workspace_id, issue_id, cursor, limit)


@router.get("/api/issues/{ref}/workflow-state")
def get_state_(ref: str, agent: Optional[str] = Query(default=None, max_length=200),
               caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        issue = issue_for(s, caller, ref)
        return interaction.view(s, issue, _agent_id(s, caller, issue, agent))


@router.post("/api/issues/{ref}/workflow-state/suspend")
def suspend(ref: str, body: AgentRef, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    lib = library()
    with state.write() as s:
        issue = issue_for(s, caller, ref)
        aid = _agent_id(s, caller, issue, body.agent)
        interaction.suspend(s, issue, aid, lib)
        return interaction.view(s, issue, aid)


@router.post("/api/issues/{ref}/workflow-state/resume")
def resume(ref: str, body: AgentRef, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    lib = library()
    with state.write() as s:
        issue = issue_for(s, caller, ref)
        aid = _agent_id(s, caller, issue, body.agent)
        inst = interaction.resume(s, issue, aid)
        after_change(s, lib, issue, inst, by_agent=acting_agent(s, caller))
        return interaction.view(s, issue, aid)
