"""A person's inbox (issue 27 §3): what needs them, one row per thing (service/inbox_feed.py makes
them), unread → read → done. Only its person ever sees an item: another's is "not found"."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select, tuple_, update
from sqlalchemy.orm import Session

from ..store.inbox_schema import InboxItem
from ..store.schema import utcnow
from .errors import Invalid, NotFound

STATES = ("unread", "read", "done")
#: What a list shows: open (unread and read), one state, or all.
FILTERS = ("open", "unread", "read", "done", "all")
KINDS = ("run_failed", "run_budget", "assigned", "review", "step", "gate", "mention", "comment", "permission")
PAGE = 50
MAX_PAGE = 200


def raise_item(session: Session, *, workspace_id: str, user_id: str, kind: str, source_key: str, title: str,
               detail: str = "", link: str = "/", issue_id: str | None = None,
               task_id: str | None = None) -> InboxItem | None:
    """Put the thing in the person's inbox, or raise it again (unread, newest) if it was read or
    done. The item when it is news to the person (to notify them of), else None."""
    row = session.scalar(select(InboxItem).where(InboxItem.workspace_id == workspace_id,
                                                 InboxItem.user_id == user_id, InboxItem.source_key == source_key))
    fields = {"title": title[:500], "detail": detail[:1000], "link": link[:300], "kind": kind}
    if row is None:
        row = InboxItem(workspace_id=workspace_id, user_id=user_id, source_key=source_key[:200], state="unread",
                        issue_id=issue_id, task_id=task_id, **fields)
        session.add(row)
        session.flush()
        return row
    news = row.state != "unread"
    for key, value in fields.items():
        setattr(row, key, value)
    if news:
        row.state, row.created_at = "unread", utcnow()
    return row if news else None


def settle(session: Session, workspace_id: str, source_prefix: str, keep: set[str] | None = None) -> list[str]:
    """Mark done the open items whose source starts with `source_prefix` (a question answered, a
    gate passed), except the sources in `keep`. The people whose inbox changed."""
    rows = list(session.scalars(select(InboxItem).where(InboxItem.workspace_id == workspace_id,
                                                        InboxItem.source_key.startswith(source_prefix, autoescape=True),
                                                        InboxItem.state != "done")))
    changed = []
    for row in rows:
        if keep is None or row.source_key not in keep:
            row.state = "done"
            changed.append(row.user_id)
    return changed


def _item(session: Session, workspace_id: str, user_id: str, item_id: str) -> InboxItem:
    row = session.get(InboxItem, item_id)
    if row is None or row.workspace_id != workspace_id or row.user_id != user_id:  # another's: not found
        raise NotFound(f"inbox item {item_id} not found; `predictorx inbox list` shows yours")
    return row


def get(session: Session, workspace_id: str, user_id: str, item_id: str) -> dict[str, Any]:
    return describe(_item(session, workspace_id, user_id, item_id))


def set_state(session: Session, workspace_id: str, user_id: str, item_id: str, state: str) -> dict[str, Any]:
    if state not in STATES:
        raise Invalid(f"state is one of {', '.join(STATES)}, not {state!r}")
    row = _item(session, workspace_id, user_id, item_id)
    row.state = state
    session.flush()
    return describe(row)


def mark_all(session: Session, workspace_id: str, user_id: str, state: str, *, from_state: str = "unread") -> int:
    if state not in STATES:
        raise Invalid(f"state is one of {', '.join(STATES)}, not {state!r}")
    result = session.execute(update(InboxItem).where(InboxItem.workspace_id == workspace_id,
                                                     InboxItem.user_id == user_id, InboxItem.state == from_state)
                             .values(state=state, updated_at=utcnow()))
    return int(getattr(result, "rowcount", 0) or 0)


def unread_count(session: Session, workspace_id: str, user_id: str) -> int:
    return session.scalar(select(func.count()).select_from(InboxItem).where(
        InboxItem.workspace_id == workspace_id, InboxItem.user_id == user_id, InboxItem.state == "unread")) or 0


def _cursor(value: str | None) -> tuple[datetime, str] | None:
    if not value:
        return None
    when, _, item_id = value.partition("|")
    try:
        return datetime.fromisoformat(when), item_id
    except ValueError:
        raise Invalid("cursor is the `next` of the previous page") from None


def page(session: Session, workspace_id: str, user_id: str, *, state: str = "open", cursor: str | None = None,
         limit: int = PAGE, with_count: bool = True) -> dict[str, Any]:
    """A page of the person's items, newest first; `next` is the cursor of the page after it.
    `with_count=False`: no unread count (the web page shows it in the sidebar, fetched on its own)."""
    if state not in FILTERS:
        raise Invalid(f"state is one of {', '.join(FILTERS)}, not {state!r}")
    if not 1 <= limit <= MAX_PAGE:
        raise Invalid(f"limit is between 1 and {MAX_PAGE}")
    q = select(InboxItem).where(InboxItem.workspace_id == workspace_id, InboxItem.user_id == user_id)
    if state == "open":
        q = q.where(InboxItem.state != "done")
    elif state != "all":
        q = q.where(InboxItem.state == state)
    after = _cursor(cursor)
    if after is not None:
        when, item_id = after
        # A row-value comparison, not "a < x OR (a = x AND b < y)": both databases then start the
        # index range (workspace, person, created_at, id) at the cursor instead of walking to it
        # (the page after the 5,000th item cost 2.6× the first on SQLite that way).
        q = q.where(tuple_(InboxItem.created_at, InboxItem.id) < tuple_(when, item_id))
    rows = list(session.scalars(q.order_by(InboxItem.created_at.desc(), InboxItem.id.desc()).limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    nxt = f"{rows[-1].created_at.isoformat()}|{rows[-1].id}" if more and rows else None
    return {"items": [describe(r) for r in rows], "next": nxt, "state": state,
            "unread": unread_count(session, workspace_id, user_id) if with_count else None}


def describe(row: InboxItem) -> dict[str, Any]:
    return {"id": row.id, "kind": row.kind, "state": row.state, "title": row.title, "detail": row.detail,
            "link": row.link, "issue_id": row.issue_id, "task_id": row.task_id,
            "created_at": row.created_at.isoformat() if row.created_at else None}
