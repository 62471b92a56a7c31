"""The inbox and subscription use cases as `/api/inbox`, `/api/issues/{ref}/subscription`, the
inbox page, the issue page's Subscribe button and `predictorx inbox` call them (issue 27 §3): each
opens its own transaction and answers a plain dict. A person's items are theirs alone."""

from __future__ import annotations

from typing import Any

from . import inbox, subscriptions
from .events import emit
from .issues import get_issue
from .transactions import Transactions


def page(tx: Transactions, workspace_id: str, user_id: str, *, state: str = "open", cursor: str | None = None,
         limit: int = inbox.PAGE, with_count: bool = True) -> dict[str, Any]:
    with tx.read() as s:
        return inbox.page(s, workspace_id, user_id, state=state, cursor=cursor, limit=limit, with_count=with_count)


def count(tx: Transactions, workspace_id: str, user_id: str) -> int:
    with tx.read() as s:
        return inbox.unread_count(s, workspace_id, user_id)


def get(tx: Transactions, workspace_id: str, user_id: str, item_id: str) -> dict[str, Any]:
    with tx.read() as s:
        return inbox.get(s, workspace_id, user_id, item_id)


def set_state(tx: Transactions, workspace_id: str, user_id: str, item_id: str, state: str) -> dict[str, Any]:
    with tx.write() as s:
        out = inbox.set_state(s, workspace_id, user_id, item_id, state)
        emit(s, workspace_id, "inbox_changed", user_id=user_id)
        return out


def mark_all(tx: Transactions, workspace_id: str, user_id: str, state: str, from_state: str = "unread") -> dict:
    with tx.write() as s:
        changed = inbox.mark_all(s, workspace_id, user_id, state, from_state=from_state)
        emit(s, workspace_id, "inbox_changed", user_id=user_id)
        return {"changed": changed, "state": state}


def subscription(tx: Transactions, workspace_id: str, user_id: str, ref: str) -> dict[str, Any]:
    with tx.read() as s:
        return subscriptions.of(s, get_issue(s, workspace_id, ref), user_id)


def subscribe(tx: Transactions, workspace_id: str, user_id: str, ref: str, subscribed: bool) -> dict[str, Any]:
    with tx.write() as s:
        return subscriptions.set_subscribed(s, get_issue(s, workspace_id, ref), user_id, subscribed)
