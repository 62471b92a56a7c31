"""A task's workflow context: the task-start sweep and the handoff it leaves (R-HAR-7).

The sweep is read by the daemon that holds the task (or the task itself); the handoff is written
by the agent (its part) and by its daemon at the end (git facts and result)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, Depends

from ...service import tasks
from ...service import workflow_handoff as handoff_svc
from ...service import workflow_sweep as sweep_svc
from ...service.errors import Forbidden, NotFound
from ..deps import Caller, get_caller, get_state
from ..models import HandoffIn
from ..state import AppState
from .workflows import issue_for, library

if TYPE_CHECKING:  # annotations only: routes and pages reach the database through the services
    from ...store.schema import Task

router = APIRouter(tags=["harness"])


def _task(s, caller: Caller, task_id: str) -> Task:
    task = tasks.get_task(s, caller.workspace_id, task_id)
    p = caller.principal
    if p.kind == "daemon" and task.daemon_id == p.daemon_id:
        return task
    if p.kind == "task" and p.task_id == task.id:
        return task
    if p.kind == "user":
        return task
    raise Forbidden("only the task itself, its daemon or a person reads or writes its harness context")


@router.get("/api/tasks/{task_id}/harness/sweep")
def sweep(task_id: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    lib = library()
    with state.read() as s:
        return sweep_svc.sweep(s, lib, _task(s, caller, task_id))


@router.get("/api/tasks/{task_id}/harness/handoff")
def get_handoff(task_id: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        row = handoff_svc.of_task(s, _task(s, caller, task_id))
        if row is None:
            raise NotFound("this task has left no handoff yet")
        return row.content


@router.post("/api/tasks/{task_id}/harness/handoff")
def write_handoff(task_id: str, body: HandoffIn, caller: Caller = Depends(get_caller),
                  state: AppState = Depends(get_state)) -> dict:
    lib = library()
    data = body.model_dump(exclude_none=True)
    with state.write() as s:
        task = _task(s, caller, task_id)
        kind = caller.principal.kind
        if kind == "task":
            row = handoff_svc.write(s, lib, task, agent_part=data)
        elif kind == "daemon":
            row = handoff_svc.write(s, lib, task, daemon_part=data)
        else:
            raise Forbidden("a handoff is written by the task's agent and its daemon")
        return row.content


@router.get("/api/issues/{ref}/handoffs")
def issue_handoffs(ref: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        issue = issue_for(s, caller, ref)
        return [r.content for r in handoff_svc.for_issue(s, issue.id)]
