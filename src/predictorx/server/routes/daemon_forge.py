"""A task's branch and its forge (issue 22 §2, §6): the daemon-only wire (the push target, with
the forge credential, for the daemon that ran the task; its report back), and a person's asks —
push now, merge or discard locally."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Depends
from ... import steptimes
from ...service import forgepush, prflow
from ...service import tasks as task_service
from ..deps import Caller, daemon_caller, get_state, user_caller
from ..forgeasks import local_action
from ..models import EarlyBranch, PushReport, Pushing
from ..safejson import SafeJSONResponse
from ..state import AppState

router = APIRouter(prefix="/api", tags=["forges"])


@router.get("/daemon/tasks/{task_id}/forge-target", response_model=None)
def forge_target(task_id: str, caller: Caller = Depends(daemon_caller),
                 state: AppState = Depends(get_state)) -> SafeJSONResponse:
    """Only to the daemon that ran the task (anyone else: 404); never cached."""
    with state.read() as s:
        target = forgepush.push_target(s, caller.principal.daemon_id or "", task_id)
    return SafeJSONResponse(asdict(target), headers={"Cache-Control": "no-store"})


@router.post("/daemon/tasks/{task_id}/push-target", response_model=None)
def push_target_at_end(task_id: str, body: EarlyBranch, caller: Caller = Depends(daemon_caller),
                       state: AppState = Depends(get_state)) -> SafeJSONResponse:
    """Asked while the agent works (and again at its end when that answer is older than
    `valid_for_s`): the push target of its branch (null when the project does not push
    automatically or the repository maps to no connection), so the daemon pushes the moment the
    work is on the branch. Only to the daemon running the task; never cached."""
    with state.read() as s:
        target = forgepush.target_at_end(s, caller.principal.daemon_id or "", task_id,
                                         body.model_dump(exclude_none=True))
    return SafeJSONResponse({"forge_push": asdict(target) if target is not None else None,
                             "valid_for_s": forgepush.TARGET_VALID_S}, headers={"Cache-Control": "no-store"})


@router.post("/daemon/tasks/{task_id}/forge-push")
def forge_pushed(task_id: str, body: PushReport, caller: Caller = Depends(daemon_caller),
                 state: AppState = Depends(get_state)) -> dict[str, Any]:
    """How a push went. Sent before the finish (a running task): the PR opens on the forge before
    the report is written, and is on record with it (service/prflow.report_push)."""
    steptimes.mark(task_id, "s_report_in")
    pr_id = prflow.report_push(state, caller.principal.daemon_id or "", task_id, ok=body.ok, sha=body.sha,
                               error=body.error, result=body.result,
                               branch=body.branch.model_dump(exclude_none=True) if body.branch else None)
    steptimes.mark(task_id, "s_report_committed")
    return {"pull_request_id": pr_id}


@router.post("/daemon/tasks/{task_id}/pushing")
def pushing(task_id: str, body: Pushing, caller: Caller = Depends(daemon_caller),
            state: AppState = Depends(get_state)) -> dict[str, Any]:
    """Sent as the daemon's push of a running task's branch starts: the PR its push report will
    open is planned now (read, nothing written), so that report goes straight to the forge
    (service/prflow.plan_ahead). Only from the daemon running the task (anyone else: 404)."""
    planned = prflow.plan_ahead(state, caller.principal.daemon_id or "", task_id,
                                branch=body.branch.model_dump(exclude_none=True), result=body.result)
    return {"planned": planned}


@router.post("/tasks/{task_id}/push", status_code=202)
def push(task_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """Ask the task's daemon to push its branch to the forge now (it answers on its own time)."""
    with state.write() as s:
        task = task_service.get_task(s, caller.workspace_id, task_id)
        forgepush.request_push(s, task)
        daemon_id = task.daemon_id
    return {"asked": True, "daemon_connected": state.hub.daemon_connected(daemon_id or "")}


@router.post("/tasks/{task_id}/local-merge")
async def local_merge(task_id: str, caller: Caller = Depends(user_caller),
                      state: AppState = Depends(get_state)) -> dict:
    return await local_action(state, caller.workspace_id, caller.user_id, task_id, "local_merge", address=caller.address)


@router.post("/tasks/{task_id}/local-discard")
async def local_discard(task_id: str, caller: Caller = Depends(user_caller),
                        state: AppState = Depends(get_state)) -> dict:
    return await local_action(state, caller.workspace_id, caller.user_id, task_id, "local_discard",
                              address=caller.address)
