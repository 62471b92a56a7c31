"""Pull requests (issue 22 §3, §5, §6): open one for a task's branch, read it, merge or discard it
through the forge, ask the agent again. Pages (server/web/pullrequests.py) call the same use
cases (service/pullrequests.py, service/forgefeedback.py)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from ...service import prflow
from ...service import pullrequests as svc
from .. import forgeasks
from ..deps import Caller, get_state, user_caller
from ..state import AppState

router = APIRouter(prefix="/api", tags=["pull requests"])


class MergeBody(BaseModel):
    method: str | None = Field(default=None, pattern="^(merge|squash|rebase)$")


class AskBody(BaseModel):
    request: str | None = Field(default=None, max_length=20_000)


def _actor(caller: Caller) -> svc.Actor:
    return svc.Actor(caller.user_id, "", caller.principal.role_in(caller.workspace_id), caller.address)


def _link_base(request: Request) -> str:
    return svc.public_url() or str(request.base_url).rstrip("/")


@router.get("/pull-requests/{pr_id}")
def get_pull_request(pr_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        return svc.serialize(svc.get(s, caller.workspace_id, pr_id))


@router.get("/issues/{ref}/pull-requests")
def issue_pull_requests(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [svc.serialize(pr) for pr in prflow.of_issue(s, caller.workspace_id, ref)]


@router.get("/tasks/{task_id}/pr")
def task_pull_request(task_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """The PR the task's work went to; `{}` when its branch has none (not pushed, or no forge)."""
    with state.read() as s:
        pr = prflow.of_task_id(s, caller.workspace_id, task_id)
        return svc.serialize(pr) if pr is not None else {}


@router.post("/tasks/{task_id}/pr")
async def open_pull_request(task_id: str, request: Request, caller: Caller = Depends(user_caller),
                            state: AppState = Depends(get_state)) -> dict:
    """Open (or return) the PR of the task's branch; pushes the branch first when it was not.
    `pushing: true` when the push is under way (the PR opens when it lands)."""
    return await run_in_threadpool(prflow.open_for_task, state, caller.workspace_id, task_id, _link_base(request))


@router.post("/pull-requests/{pr_id}/merge")
async def merge(pr_id: str, body: MergeBody, caller: Caller = Depends(user_caller),
                state: AppState = Depends(get_state)) -> dict:
    return await run_in_threadpool(prflow.merge_pr, state, caller.workspace_id, pr_id, _actor(caller), body.method)


@router.post("/pull-requests/{pr_id}/discard")
async def discard(pr_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return await run_in_threadpool(prflow.discard_pr, state, caller.workspace_id, pr_id, _actor(caller))


@router.post("/pull-requests/{pr_id}/ask-again")
def ask_again(pr_id: str, body: AskBody, caller: Caller = Depends(user_caller),
              state: AppState = Depends(get_state)) -> dict:
    return prflow.ask_again(state, caller.workspace_id, pr_id, caller.user_id, body.request)


@router.post("/tasks/{task_id}/merge")
async def merge_task(task_id: str, body: MergeBody, caller: Caller = Depends(user_caller),
                     state: AppState = Depends(get_state)) -> dict:
    """Merge the task's work: its PR through the forge, or — a local folder with no forge — the
    branch into the person's checked-out branch by the task's daemon (server/forgeasks.py)."""
    pr_id = await run_in_threadpool(prflow.pr_id_of_task, state, caller.workspace_id, task_id)
    if pr_id is None:
        return {"local": await forgeasks.local_action(state, caller.workspace_id, caller.user_id, task_id, "local_merge",
                                                        address=caller.address)}
    return await run_in_threadpool(prflow.merge_pr, state, caller.workspace_id, pr_id, _actor(caller), body.method)


@router.post("/tasks/{task_id}/discard")
async def discard_task(task_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """Discard the task's work: close its PR and delete the branch on the forge, or delete the
    local branch (a local folder with no forge)."""
    pr_id = await run_in_threadpool(prflow.pr_id_of_task, state, caller.workspace_id, task_id)
    if pr_id is None:
        return {"local": await forgeasks.local_action(state, caller.workspace_id, caller.user_id, task_id, "local_discard",
                                                        address=caller.address)}
    return await run_in_threadpool(prflow.discard_pr, state, caller.workspace_id, pr_id, _actor(caller))
