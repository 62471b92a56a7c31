"""FastAPI dependencies: the app state, the caller (principal) and the workspace it acts in."""

from __future__ import annotations

import time
from dataclasses import dataclass

from fastapi import Depends, Header, Request

from ..service import auth
from ..service.errors import Forbidden
from ..store.schema import Workspace
from .state import AppState

_CACHE_TTL = 2.0  # seconds a token lookup is reused; keeps listing endpoints fast


def get_state(request: Request) -> AppState:
    return request.app.state.px


def _raw_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get("px_token") or None


def get_principal(request: Request, state: AppState = Depends(get_state)) -> auth.Principal:
    raw = _raw_token(request)
    cache = request.app.state.token_cache
    hit = cache.get(raw) if raw else None
    if hit and hit[0] > time.monotonic():
        return hit[1]
    with state.read() as session:
        principal = auth.authenticate(session, raw)
    if principal.kind != "task":  # a task token dies with its task: always look it up
        if len(cache) > 10_000:
            cache.clear()
        cache[raw] = (time.monotonic() + _CACHE_TTL, principal)
    return principal


@dataclass
class Caller:
    principal: auth.Principal
    workspace_id: str

    @property
    def user_id(self) -> str | None:
        return self.principal.user_id


def get_caller(principal: auth.Principal = Depends(get_principal), state: AppState = Depends(get_state),
               x_workspace: str | None = Header(default=None, max_length=200)) -> Caller:
    if principal.kind == "user" and not x_workspace and principal.workspace_ids:
        return Caller(principal, principal.workspace_ids[0])
    with state.read() as session:
        ws: Workspace = auth.resolve_workspace(session, principal, x_workspace)
        return Caller(principal, ws.id)


def user_caller(caller: Caller = Depends(get_caller)) -> Caller:
    """Routes for people (and the CLI on their behalf), not for daemons or agents."""
    if caller.principal.kind != "user":
        raise Forbidden("this endpoint needs a user token")
    return caller


def daemon_caller(caller: Caller = Depends(get_caller)) -> Caller:
    if caller.principal.kind != "daemon":
        raise Forbidden("this endpoint needs a daemon token (from POST /api/daemon/register)")
    return caller
