"""FastAPI dependencies: the app state, the caller (principal) and the workspace it acts in.

They are `async def` on purpose: FastAPI runs a plain `def` dependency in the thread pool, and a
request used to make four such hops before its endpoint even started. They only block (in the
thread pool) when they must read the database: a token not in the cache (server/principals.py), or a workspace given by
slug or by an id the principal does not already carry.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Depends, Header, Request
from fastapi.concurrency import run_in_threadpool

from ..service import auth
from ..service.errors import Forbidden
from ..store.schema import Workspace
from .state import AppState



async def get_state(request: Request) -> AppState:
    return request.app.state.px


def _raw_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get("px_token") or None


def token_hash(request: Request) -> str | None:
    """The hash of the token this request came with (an event stream is checked again by it)."""
    raw = _raw_token(request)
    return auth.hash_token(raw) if raw else None


def _authenticate(state: AppState, raw: str | None) -> auth.Principal:
    with state.read() as session:
        return auth.authenticate(session, raw)


#: Where `access.enforce` leaves the principal it authenticated, so the route's own dependencies
#: do not look the token up a second time in the same request.
PRINCIPAL_KEY = "px.principal"


async def get_principal(request: Request, state: AppState = Depends(get_state)) -> auth.Principal:
    known = request.scope.get(PRINCIPAL_KEY)
    if known is not None:
        return known
    raw = _raw_token(request)
    cache = state.principals
    key = cache.key(raw) if raw else None
    hit = cache.get(key) if key else None
    if hit is not None:
        return hit
    generation = cache.generation  # a change committed while we read must not be undone by us
    principal = await run_in_threadpool(_authenticate, state, raw)
    if key:
        cache.put(key, principal, generation)  # never a task token: it dies with its task
    return principal


@dataclass
class Caller:
    principal: auth.Principal
    workspace_id: str
    #: The client's address as the server saw it (the proxy's forwarded one where uvicorn trusts
    #: it): what the audit log records (service/audit.py).
    address: str | None = None

    @property
    def user_id(self) -> str | None:
        return self.principal.user_id


def _resolve(state: AppState, principal: auth.Principal, x_workspace: str | None) -> Caller:
    with state.read() as session:
        ws: Workspace = auth.resolve_workspace(session, principal, x_workspace)
        return Caller(principal, ws.id)


#: The web UI's workspace switcher remembers the chosen workspace in this cookie; it stands in
#: for X-Workspace where a browser cannot send headers (EventSource).
WORKSPACE_COOKIE = "px_workspace"


async def get_caller(request: Request, x_workspace: str | None = Header(default=None, max_length=200)) -> Caller:
    """The caller and its workspace. Flat, as daemon_caller: FastAPI solves each level of nested
    dependencies (this one's principal and state, theirs) with its own bookkeeping, on every request."""
    state: AppState = request.app.state.px
    return await _caller(request, await get_principal(request, state), state, x_workspace)


def client_address(request: Request) -> str | None:
    return request.client.host if request.client else None


async def _caller(request: Request, principal: auth.Principal, state: AppState, x_workspace: str | None) -> Caller:
    found = await _workspace_caller(request, principal, state, x_workspace)
    return Caller(found.principal, found.workspace_id, client_address(request))


async def _workspace_caller(request: Request, principal: auth.Principal, state: AppState,
                            x_workspace: str | None) -> Caller:
    if not x_workspace:
        chosen = request.cookies.get(WORKSPACE_COOKIE)
        if chosen and chosen in principal.workspace_ids:  # a stale or foreign cookie is ignored
            x_workspace = chosen
    # What resolve_workspace would answer, without a query: the principal's own workspace ids
    # (workspaces are never deleted, so an id the principal carries always resolves to itself).
    if not x_workspace and principal.workspace_ids:
        return Caller(principal, principal.workspace_ids[0])
    if x_workspace and x_workspace in principal.workspace_ids:
        return Caller(principal, x_workspace)
    return await run_in_threadpool(_resolve, state, principal, x_workspace)


async def user_caller(request: Request, x_workspace: str | None = Header(default=None, max_length=200)) -> Caller:
    """Routes for people (and the CLI on their behalf), not for daemons or agents."""
    caller = await get_caller(request, x_workspace)
    if caller.principal.kind != "user":
        raise Forbidden("this endpoint needs a user token")
    return caller


async def daemon_caller(request: Request, x_workspace: str | None = Header(default=None, max_length=200)) -> Caller:
    """`get_caller` for a daemon, flat: one dependency instead of three levels of them, on the
    routes a busy daemon calls for every task (claim, status, finish)."""
    state: AppState = request.app.state.px
    principal = await get_principal(request, state)
    if principal.kind != "daemon":
        raise Forbidden("this endpoint needs a daemon token (from POST /api/daemon/register)")
    return await _caller(request, principal, state, x_workspace)
