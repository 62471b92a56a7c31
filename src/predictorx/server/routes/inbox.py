"""`/api/inbox` (a person's inbox: list, count, one item, read/unread/done) and
`/api/issues/{ref}/subscription` (issue 27 §3; service/inbox_actions.py, the use cases the inbox
page and `predictorx inbox` call too). Another person's item answers 404."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Query

from ...service import inbox_actions as actions
from ...service.inbox import MAX_PAGE, PAGE
from ..deps import Caller, get_state, user_caller
from ..models import Strict
from ..state import AppState

router = APIRouter(prefix="/api", tags=["inbox"])


class StateIn(Strict):
    state: Literal["unread", "read", "done"]


class MarkAllIn(Strict):
    state: Literal["read", "done"] = "read"
    #: which items: the unread ones (default), or the read ones
    from_state: Literal["unread", "read"] = "unread"


def _person(caller: Caller) -> str:
    return caller.user_id or ""  # (user_caller: a person's token, which always names its person)


@router.get("/inbox")
def items(state: str = Query(default="open", max_length=10), cursor: str | None = Query(default=None, max_length=100),
          limit: int = Query(default=PAGE, ge=1, le=MAX_PAGE), caller: Caller = Depends(user_caller),
          state_: AppState = Depends(get_state)) -> dict:
    """The person's items newest first, a page at a time (`next`: the cursor of the next page);
    `state`: open (unread and read, the default), unread, read, done or all."""
    return actions.page(state_, caller.workspace_id, _person(caller), state=state, cursor=cursor, limit=limit)


@router.get("/inbox/count")
def unread(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return {"unread": actions.count(state, caller.workspace_id, _person(caller))}


@router.post("/inbox/mark-all")
def mark_all(body: MarkAllIn, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.mark_all(state, caller.workspace_id, _person(caller), body.state, body.from_state)


@router.get("/inbox/{item_id}")
def item(item_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.get(state, caller.workspace_id, _person(caller), item_id)


@router.patch("/inbox/{item_id}")
def set_state(item_id: str, body: StateIn, caller: Caller = Depends(user_caller),
              state: AppState = Depends(get_state)) -> dict:
    return actions.set_state(state, caller.workspace_id, _person(caller), item_id, body.state)


@router.get("/issues/{ref}/subscription")
def subscription(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.subscription(state, caller.workspace_id, _person(caller), ref)


@router.put("/issues/{ref}/subscription")
def subscribe(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.subscribe(state, caller.workspace_id, _person(caller), ref, True)


@router.delete("/issues/{ref}/subscription")
def unsubscribe(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.subscribe(state, caller.workspace_id, _person(caller), ref, False)
