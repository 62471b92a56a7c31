"""`/api/forges`: a workspace's forge connections (issue 22 §1; service/forges.py).

Owners and admins add, change, remove and test them; members list them. No answer ever carries
a credential; the webhook secret is in the answer to add and to rotate-webhook-secret only.
The webhook receiver (`/api/forges/{id}/webhook`) is routes/forgehooks.py's.
"""

from __future__ import annotations

import os

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool

from ...service import forges as svc
from ..deps import Caller, get_state, user_caller
from ..models import ForgeConnectionCreate, ForgeConnectionUpdate
from ..state import AppState

router = APIRouter(prefix="/api/forges", tags=["forges"])

PUBLIC_URL_ENV = "PREDICTORX_PUBLIC_URL"


def public_base(request: Request) -> str:
    """Where forges reach this server: PREDICTORX_PUBLIC_URL (behind a proxy, or a name the forge
    can resolve), else the address this request came to."""
    return os.environ.get(PUBLIC_URL_ENV, "").strip().rstrip("/") or str(request.base_url).rstrip("/")


def _with_secret(described: dict, secret: str) -> dict:
    return {**described, "webhook_secret": secret,
            "webhook_secret_note": "shown once: paste it into the forge's webhook settings now, with the "
                                   "webhook_url; `predictorx forge rotate-webhook-secret` makes a new one"}


def list_connections(state: AppState, caller: Caller, base: str | None) -> list[dict]:
    with state.read() as s:
        return [svc.describe(row, base) for row in svc.list_connections(s, caller.workspace_id)]


def add_connection(state: AppState, caller: Caller, body: ForgeConnectionCreate, base: str) -> dict:
    with state.write() as s:
        row, secret = svc.add_connection(s, caller.workspace_id, caller.user_id, **body.model_dump())
        return _with_secret(svc.describe(row, base), secret)


def update_connection(state: AppState, caller: Caller, ref: str, body: ForgeConnectionUpdate, base: str) -> dict:
    with state.write() as s:
        row = svc.get_connection(s, caller.workspace_id, ref)
        svc.update_connection(s, row, **body.model_dump(exclude_unset=True))
        return svc.describe(row, base)


def remove_connection(state: AppState, caller: Caller, ref: str) -> dict:
    with state.write() as s:
        row = svc.get_connection(s, caller.workspace_id, ref)
        name = row.name
        finished = svc.remove_connection(s, row)
    said = f"; with it the records of {finished} finished pull request(s)" if finished else ""
    return {"removed": name, "finished_pull_requests_removed": finished,
            "message": f"removed forge connection {name}{said}"}


def check_connection(state: AppState, caller: Caller, ref: str) -> dict:
    with state.read() as s:  # the token is opened after the session ends: no transaction waits on a forge
        row = svc.get_connection(s, caller.workspace_id, ref)
        kind, name = row.kind, row.name
        conn = svc.connection_of(row)
    account = svc.check_connection(kind, conn)
    return {"ok": True, "name": name, "kind": kind, "account": account,
            "message": f"{name}: the token works; it acts as {account}"}


def rotate_webhook_secret(state: AppState, caller: Caller, ref: str, base: str) -> dict:
    with state.write() as s:
        row = svc.get_connection(s, caller.workspace_id, ref)
        secret = svc.rotate_webhook_secret(s, row)
        return _with_secret(svc.describe(row, base), secret)


@router.get("")
def list_(request: Request, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    return list_connections(state, caller, public_base(request))


@router.post("", status_code=201)
def add(request: Request, body: ForgeConnectionCreate, caller: Caller = Depends(user_caller),
        state: AppState = Depends(get_state)) -> dict:
    return add_connection(state, caller, body, public_base(request))


@router.get("/{connection_id}")
def get(request: Request, connection_id: str, caller: Caller = Depends(user_caller),
        state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        return svc.describe(svc.get_connection(s, caller.workspace_id, connection_id), public_base(request))


@router.patch("/{connection_id}")
def update(request: Request, connection_id: str, body: ForgeConnectionUpdate, caller: Caller = Depends(user_caller),
           state: AppState = Depends(get_state)) -> dict:
    return update_connection(state, caller, connection_id, body, public_base(request))


@router.delete("/{connection_id}")
def remove(connection_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return remove_connection(state, caller, connection_id)


@router.post("/{connection_id}/test")
async def test(connection_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return await run_in_threadpool(check_connection, state, caller, connection_id)


@router.post("/{connection_id}/webhook-secret")
def rotate(request: Request, connection_id: str, caller: Caller = Depends(user_caller),
           state: AppState = Depends(get_state)) -> dict:
    return rotate_webhook_secret(state, caller, connection_id, public_base(request))
