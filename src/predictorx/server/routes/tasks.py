from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Response

from ...service import serialize
from ...service import permissions, runnability, task_view, usage_actions
from ...service import tasks as svc
from ...service.errors import Forbidden
from ..deps import Caller, get_caller, get_state, user_caller
from ..models import MessageBatch, PermissionAnswerIn
from ..safejson import SafeJSONResponse
from ..state import AppState

router = APIRouter(prefix="/api/tasks", tags=["tasks"])


def _visible(caller: Caller, task) -> None:
    p = caller.principal
    if p.kind == "task" and p.task_id != task.id:
        raise Forbidden("a task token sees only its own task")
    if p.kind == "daemon" and task.daemon_id != p.daemon_id:
        raise Forbidden("this task is not held by this daemon")


def _out(s, t) -> dict:
    agent, issue = svc.agent_and_issue(s, t)
    out = serialize.task(t, agent.name if agent else None, issue.number if issue else None)
    out["wait_reason"] = runnability.queued_reason(s, t, agent)  # computed now: a daemon may have left
    return out


@router.get("")
def list_tasks(project: str | None = Query(default=None, max_length=200),
               status: str | None = Query(default=None, max_length=50),
               limit: int = Query(default=200, ge=1, le=1000),
               caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [_out(s, t) for t in svc.list_tasks(s, caller.workspace_id, project_id=project,
                                                  status=status, limit=limit)]


@router.get("/{task_id}")
def get_task(task_id: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        t = task_view.read(s, caller.workspace_id, task_id)  # one statement: it is polled (issue 30)
        _visible(caller, t)
        out = task_view.answer(s, t)
        if caller.principal.kind in ("task", "daemon"):
            out["context"] = t.context
        return out


@router.get("/{task_id}/messages")
def messages(task_id: str, after: int = Query(default=-1, ge=-1, le=2_000_000_000),
             limit: int = Query(default=1000, ge=1, le=10_000),
             caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        t = svc.get_task(s, caller.workspace_id, task_id)
        _visible(caller, t)
        return [serialize.message(m) for m in svc.list_messages(s, t, after, limit)]


@router.get("/{task_id}/review")
def review(task_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """The agent's work as its daemon reported it at the end: branch, where it lives, baseline,
    files changed and the diff (empty object while the run goes on or when none was sent)."""
    with state.read() as s:
        return svc.get_task(s, caller.workspace_id, task_id).review or {}


@router.post("/{task_id}/rerun")
def rerun(task_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """Queue the same agent on the same issue again."""
    with state.write() as s:
        return _out(s, svc.rerun(s, svc.get_task(s, caller.workspace_id, task_id, for_update=True)))


@router.post("/{task_id}/messages", response_model=None)
def post_messages(task_id: str, body: MessageBatch, caller: Caller = Depends(get_caller),
                  state: AppState = Depends(get_state)) -> Response:
    if caller.principal.kind != "daemon":  # an agent must not rewrite what it is recorded saying
        raise Forbidden("messages are posted by the daemon running the task")
    with state.write() as s:
        t = svc.get_task(s, caller.workspace_id, task_id, for_update=True)
        _visible(caller, t)
        last = svc.append_messages(s, t, [m.model_dump() for m in body.messages])
        # The run's usage so far; a hard budget it reaches stops the run (issue 27 §2).
        stop = usage_actions.usage_reported(s, t, body.usage.model_dump() if body.usage else None)
    return SafeJSONResponse({"last_seq": last, "stop": stop})  # (encoded here: no second thread-pool trip)


@router.post("/{task_id}/cancel")
def cancel(task_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        t = svc.cancel(s, svc.get_task(s, caller.workspace_id, task_id, for_update=True))
        return _out(s, t)


@router.post("/{task_id}/answer")
def answer(task_id: str, body: PermissionAnswerIn, caller: Caller = Depends(user_caller),
           state: AppState = Depends(get_state)) -> dict:
    """A person picks an option of the question the task's ACP agent is waiting on (`ask`)."""
    with state.write() as s:
        t = permissions.answer(s, svc.get_task(s, caller.workspace_id, task_id, for_update=True), body.option_id,
                               caller.user_id, body.request_id)
        return _out(s, t)
