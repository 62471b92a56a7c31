"""`/api/forges`: a workspace's forge connections (issue 22 §1; service/forge_actions.py, the use
cases Settings → Forges calls too).

Owners and admins add, change, remove and test them; members list them. No answer ever carries
a credential; the webhook secret is in the answer to add and to rotate-webhook-secret only.
The webhook receiver (`/api/forges/{id}/webhook`) is routes/forgehooks.py's.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool

from ...service import forge_actions as actions
from ..deps import Caller, get_state, user_caller
from ..models import ForgeConnectionCreate, ForgeConnectionUpdate
from ..publicurl import public_base
from ..state import AppState

router = APIRouter(prefix="/api/forges", tags=["forges"])


@router.get("")
def list_(request: Request, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    return actions.list_connections(state, caller.workspace_id, public_base(request))


@router.post("", status_code=201)
def add(request: Request, body: ForgeConnectionCreate, caller: Caller = Depends(user_caller),
        state: AppState = Depends(get_state)) -> dict:
    return actions.add_connection(state, caller.workspace_id, caller.user_id, body.model_dump(), public_base(request),
                                  address=caller.address)


@router.get("/{connection_id}")
def get(request: Request, connection_id: str, caller: Caller = Depends(user_caller),
        state: AppState = Depends(get_state)) -> dict:
    return actions.describe_connection(state, caller.workspace_id, connection_id, public_base(request))


@router.patch("/{connection_id}")
def update(request: Request, connection_id: str, body: ForgeConnectionUpdate, caller: Caller = Depends(user_caller),
           state: AppState = Depends(get_state)) -> dict:
    return actions.update_connection(state, caller.workspace_id, connection_id, body.model_dump(exclude_unset=True),
                                     public_base(request), actor_id=caller.user_id, address=caller.address)


@router.delete("/{connection_id}")
def remove(connection_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.remove_connection(state, caller.workspace_id, connection_id, actor_id=caller.user_id,
                                     address=caller.address)


@router.post("/{connection_id}/test")
async def test(connection_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return await run_in_threadpool(actions.check_connection, state, caller.workspace_id, connection_id)


@router.post("/{connection_id}/webhook-secret")
def rotate(request: Request, connection_id: str, caller: Caller = Depends(user_caller),
           state: AppState = Depends(get_state)) -> dict:
    return actions.rotate_webhook_secret(state, caller.workspace_id, connection_id, public_base(request),
                                         actor_id=caller.user_id, address=caller.address)
