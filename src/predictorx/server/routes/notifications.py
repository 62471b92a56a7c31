"""`/api/notifications/…` (issue 27 §4; service/notify_actions.py, the use cases the Notifications
page and `predictorx notify` call too): a person's channels and the workspace's (owners and admins
change those: the service checks), a test message, the delivery log, redelivery. A channel's URL
and secret are write-only: no answer carries them (a server-made signing secret once, at creation)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from ...service import notify_actions as actions
from ..deps import Caller, get_state, user_caller
from ..models import ChannelIn, ChannelPatch
from ..state import AppState

router = APIRouter(prefix="/api/notifications", tags=["notifications"])


def _role(caller: Caller) -> str | None:
    return caller.principal.role_in(caller.workspace_id)


def _person(caller: Caller) -> str:
    return caller.user_id or ""  # (user_caller: a person's token, which always names its person)


@router.get("/channels")
def channels(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    """Your channels and the workspace's (never a URL or a secret)."""
    return actions.list_channels(state, caller.workspace_id, _person(caller))


@router.post("/channels", status_code=201)
def add(body: ChannelIn, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.add_channel(state, caller.workspace_id, _person(caller), _role(caller), body.model_dump(),
                               address=caller.address)


@router.patch("/channels/{channel_id}")
def change(channel_id: str, body: ChannelPatch, caller: Caller = Depends(user_caller),
           state: AppState = Depends(get_state)) -> dict:
    return actions.update_channel(state, caller.workspace_id, _person(caller), _role(caller), channel_id,
                                  body.model_dump(exclude_none=True), address=caller.address)


@router.delete("/channels/{channel_id}")
def remove(channel_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.remove_channel(state, caller.workspace_id, _person(caller), _role(caller), channel_id,
                                  address=caller.address)


@router.post("/channels/{channel_id}/test", status_code=202)
def test(channel_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.test_channel(state, caller.workspace_id, _person(caller), _role(caller), channel_id)


@router.get("/channels/{channel_id}/deliveries")
def deliveries(channel_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """The channel's latest deliveries, each with its attempts: status, HTTP code, the answer's start."""
    return actions.channel_log(state, caller.workspace_id, _person(caller), channel_id)


@router.post("/deliveries/{delivery_id}/redeliver", status_code=202)
def redeliver(delivery_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.redeliver(state, caller.workspace_id, _person(caller), _role(caller), delivery_id)
