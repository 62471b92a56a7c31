"""Workflow instances on an issue, their steps, the interaction state and the record (SPEC §10):
the API's side. Each action is one use case in service/workflow_actions.py, which the issue page
calls too; a route parses, calls, answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from fastapi import APIRouter, Depends, Query
from sqlalchemy.orm import Session

from ...service import issues as issue_svc
from ...service import workflow_actions as actions
from ...service import workflow_instances as inst_svc
from ...service import workflow_interaction as interaction
from ...service import workflow_record as record_svc
from ...service.errors import Forbidden
from ...workflows import prov
from ...workflows.engine import Actor
from ...workflows.library import Library
from ..deps import Caller, get_caller, get_state
from ..models import AgentRef, ExitIn, StartIn, StepIn, StopIn, SwitchAnswerIn
from ..state import AppState

if TYPE_CHECKING:  # annotations only: routes and pages reach the database through the services
    from ...store.schema import Agent, Issue

router = APIRouter(tags=["workflows"])

library = actions.library


# The caller's principal and workspace, handed to the use cases' helpers (the bean, classification
# and task-handoff routes use them too).
def issue_for(s: Session, caller: Caller, ref: str) -> Issue:
    return actions.issue_for(s, caller.principal, caller.workspace_id, ref)


def actor_for(s: Session, caller: Caller, issue: Issue, lib: Library | None) -> tuple[Actor, str | None]:
    return actions.actor_for(s, caller.principal, issue, lib)


def acting_agent(s: Session, caller: Caller) -> Agent | None:
    return actions.acting_agent(s, caller.principal)


def agent_id_for(s: Session, caller: Caller, issue: Issue, ref: str | None) -> str:
    return actions.agent_id_for(s, caller.principal, caller.workspace_id, issue, ref)


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
        return [actions.view(lib, issue, i) for i in inst_svc.list_instances(s, issue)]


@router.post("/api/issues/{ref}/workflows")
def start(ref: str, body: StartIn, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.start(state, caller.principal, caller.workspace_id, ref, body.process)


@router.get("/api/issues/{ref}/workflows/{process}")
def show(ref: str, process: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    lib = library()
    with state.read() as s:
        issue = issue_for(s, caller, ref)
        inst = inst_svc.get_instance(s, issue, process)
        out = actions.view(lib, issue, inst)
        out["history"] = [inst_svc.step_dict(r) for r in inst_svc.history(s, inst)]
        return out


@router.post("/api/issues/{ref}/workflows/{process}/steps")
def complete(ref: str, process: str, body: StepIn, caller: Caller = Depends(get_caller),
             state: AppState = Depends(get_state)) -> dict:
    return actions.complete(state, caller.principal, caller.workspace_id, ref, process, body.completion())


@router.get("/api/issues/{ref}/workflows/{process}/prov")
def prov_document(ref: str, process: str, caller: Caller = Depends(get_caller),
                  state: AppState = Depends(get_state)) -> dict:
    lib = library()
    with state.read() as s:
        issue = issue_for(s, caller, ref)
        inst = inst_svc.get_instance(s, issue, process)
        return prov.document(inst_svc.instance_dict(inst, issue),
                             [inst_svc.step_dict(r) for r in inst_svc.history(s, inst)],
                             bean_ops=prov.bean_ops_of(lib.processes))


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
        return interaction.view(s, issue, agent_id_for(s, caller, issue, agent))


@router.post("/api/issues/{ref}/workflow-state/suspend")
def suspend(ref: str, body: AgentRef, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.suspend(state, caller.principal, caller.workspace_id, ref, body.agent)


@router.post("/api/issues/{ref}/workflow-state/answer")
def answer(ref: str, body: SwitchAnswerIn, caller: Caller = Depends(get_caller),
           state: AppState = Depends(get_state)) -> dict:
    """Seed scenario 3: a person answers "suspend the content work, or file a bean?"."""
    return actions.answer_switch(state, caller.principal, caller.workspace_id, ref, body.agent, body.answer, body.reason)


@router.post("/api/issues/{ref}/workflows/{process}/exit")
def exit_(ref: str, process: str, body: ExitIn, caller: Caller = Depends(get_caller),
          state: AppState = Depends(get_state)) -> dict:
    """Leave the workflow by a declared exit (feature-request: defer), by a holder of its role."""
    return actions.exit_instance(state, caller.principal, caller.workspace_id, ref, process, body.exit, body.reason)


@router.post("/api/issues/{ref}/workflows/{process}/stop")
def stop(ref: str, process: str, body: StopIn, caller: Caller = Depends(get_caller),
         state: AppState = Depends(get_state)) -> dict:
    """A person stops a running workflow, with a reason (one started automatically, say)."""
    return actions.stop(state, caller.principal, caller.workspace_id, ref, process, body.reason)


@router.post("/api/issues/{ref}/workflow-state/resume")
def resume(ref: str, body: AgentRef, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.resume(state, caller.principal, caller.workspace_id, ref, body.agent)
