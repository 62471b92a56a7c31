"""The relay a daemon pushes a task's branch through (and a follow-up fetches it from): git smart
HTTP on this server, forwarded to the forge with the connection's credential, which never leaves
the server (service/forgerelay.py). Authenticated by the task's relay pass in HTTP Basic, not by
a bearer token (server/access.py: RELAY)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response, StreamingResponse
from starlette.requests import ClientDisconnect

from ...service import forgerelay, relaypass
from ...service.errors import ServiceError
from ..deps import get_state
from ..state import AppState

router = APIRouter(prefix="/api", tags=["forges"])
REALM = 'Basic realm="Predictor X relay"'


def _refused(message: str, status: int) -> Response:
    headers = {"Cache-Control": "no-store"} | ({"WWW-Authenticate": REALM} if status == 401 else {})
    return Response(f"{message}\n", status_code=status, media_type="text/plain; charset=utf-8", headers=headers)


def _opened(state: AppState, request: Request, task_id: str, service: str) -> forgerelay.Upstream:
    given = relaypass.verify(forgerelay.pass_from_basic(request.headers.get("authorization")))
    with state.read() as s:
        return forgerelay.upstream(s, task_id, given, service)


async def _relay(state: AppState, request: Request, task_id: str, service: str, suffix: str) -> Response:
    try:
        up = await run_in_threadpool(_opened, state, request, task_id, service)
        headers = forgerelay.forwarded_headers(request.headers)
        content = None
        if request.method == "POST":
            limit = forgerelay.max_body_bytes()
            declared = headers.get("content-length", "0")
            if not declared.isdigit() or int(declared) > limit:
                raise forgerelay.RelayRefused(f"the push is larger than this server relays ({limit} bytes, "
                                              f"{forgerelay.MAX_BODY_ENV})", 413)
            if service == "git-receive-pack":
                if headers.get("content-encoding", "identity") != "identity":
                    raise forgerelay.RelayRefused("the relay reads a push's commands: send it without "
                                                  "Content-Encoding", 415)
                content = await forgerelay.checked_push(forgerelay.idle_bounded(request.stream()), up.branch, limit)
            else:
                content = forgerelay.bounded(forgerelay.idle_bounded(request.stream()), limit)
        params = {"service": service} if request.method == "GET" else None
        answer = await forgerelay.forward(up, request.method, suffix, params=params, headers=headers, content=content)
    except relaypass.BadPass as e:
        return _refused(str(e), 401)
    except ServiceError as e:
        return _refused(e.message, e.status)
    except ClientDisconnect:  # the daemon went away mid-body: nothing reached the forge whole
        return _refused("the request ended before its body did", 400)
    return StreamingResponse(answer.body, status_code=answer.status,
                             headers={**answer.headers, "Cache-Control": "no-cache"})


@router.get("/daemon/tasks/{task_id}/git/info/refs", response_model=None)
async def relay_refs(task_id: str, request: Request, service: str = "",
                     state: AppState = Depends(get_state)) -> Response:
    """The forge's ref advertisement for a push (`service=git-receive-pack`) or a fetch."""
    return await _relay(state, request, task_id, service, "/info/refs")


@router.post("/daemon/tasks/{task_id}/git/git-receive-pack", response_model=None)
async def relay_push(task_id: str, request: Request, state: AppState = Depends(get_state)) -> Response:
    """A push of the pass's branch only (never a delete), streamed to the forge."""
    return await _relay(state, request, task_id, "git-receive-pack", "/git-receive-pack")


@router.post("/daemon/tasks/{task_id}/git/git-upload-pack", response_model=None)
async def relay_fetch(task_id: str, request: Request, state: AppState = Depends(get_state)) -> Response:
    """A follow-up's fetch of the branch it continues."""
    return await _relay(state, request, task_id, "git-upload-pack", "/git-upload-pack")
