"""The audit log (issue 28 §4): an append-only record of security-relevant events.

`record(session, …)` is the one function every audited use case calls, in the same transaction as
the change it records: the change and its record commit together or not at all, and each audited
action writes exactly one row. A record holds who (the actor's id and their name then), what (an
action from ACTIONS, a target, a small `detail` — names and roles, never a secret's value), when
and from which address. Rows are never changed (a trigger refuses an UPDATE, migration 0022); only
the retention (`prune`, run by the sweeper) deletes rows older than PREDICTORX_AUDIT_RETENTION_DAYS.

Owners and admins read their workspace's events: those recorded in it, and the sign-ins of its
members (a sign-in belongs to a person, not to one workspace). Paged newest first by id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, or_, select
from sqlalchemy.orm import Session

from ..store.schema import AuditEvent, Member, User, utcnow
from .errors import Forbidden, Invalid

#: What is recorded, one name per audited action (docs/security.md lists them).
ACTIONS = frozenset({
    "sign_in", "token.create", "token.revoke",
    "member.add", "member.role", "member.remove",
    "forge.add", "forge.update", "forge.remove", "forge.webhook_secret",
    "secret.set", "secret.unset", "secret.grant", "secret.revoke",
    "agent.sandbox", "merge", "oidc.configure", "budget.set", "budget.remove",
    "notify.add", "notify.update", "notify.remove",
})
RETENTION_ENV = "PREDICTORX_AUDIT_RETENTION_DAYS"
DEFAULT_RETENTION_DAYS = 365
PAGE_MAX = 500
_DETAIL_MAX = 4000


def record(session: Session, *, workspace_id: str | None, actor_id: str | None, action: str,
           target: str | None = None, detail: dict[str, Any] | None = None, address: str | None = None) -> AuditEvent:
    """Append one event (flushed with the caller's transaction). `detail` must never hold a secret."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")  # a programming error, not a client's
    if detail is not None and len(json.dumps(detail, default=str)) > _DETAIL_MAX:
        detail = {"truncated": True}
    name = session.scalar(select(User.name).where(User.id == actor_id)) if actor_id else None
    event = AuditEvent(at=utcnow(), workspace_id=workspace_id, actor_id=actor_id, actor_name=name, action=action,
                       target=(target or None) and target[:500], detail=detail, address=(address or None) and address[:100])
    session.add(event)
    session.flush()
    return event


def require_reader(role: str | None) -> None:
    if role not in ("owner", "admin"):
        raise Forbidden("only a workspace owner or admin reads the audit log")


def _visible(workspace_id: str) -> Any:
    members = select(Member.user_id).where(Member.workspace_id == workspace_id)
    return or_(AuditEvent.workspace_id == workspace_id,
               and_(AuditEvent.workspace_id.is_(None), AuditEvent.actor_id.in_(members)))


def _actor_ids(session: Session, workspace_id: str, actor: str) -> list[str]:
    """An actor given by user id or by name (a member of this workspace)."""
    q = (select(User.id).join(Member, Member.user_id == User.id)
         .where(Member.workspace_id == workspace_id, or_(User.id == actor, User.name == actor)))
    return list(session.scalars(q))


def _query(session: Session, workspace_id: str, *, since: datetime | None, actor: str | None,
           action: str | None) -> Any:
    q = select(AuditEvent).where(_visible(workspace_id))
    if since is not None:
        q = q.where(AuditEvent.at >= since)
    if actor:
        ids = _actor_ids(session, workspace_id, actor)
        q = q.where(AuditEvent.actor_id.in_(ids or [actor]))
    if action:
        q = q.where(or_(AuditEvent.action == action, AuditEvent.action.startswith(action.rstrip(".") + ".")))
    return q


def page(session: Session, workspace_id: str, *, role: str | None, since: datetime | None = None,
         actor: str | None = None, action: str | None = None, before: int | None = None,
         limit: int = 100) -> tuple[list[AuditEvent], int | None]:
    """Newest first; (events, the `before` cursor of the next page or None at the end)."""
    require_reader(role)
    if not 1 <= limit <= PAGE_MAX:
        raise Invalid(f"limit is 1 to {PAGE_MAX}")
    q = _query(session, workspace_id, since=since, actor=actor, action=action)
    if before is not None:
        q = q.where(AuditEvent.id < before)
    rows = list(session.scalars(q.order_by(AuditEvent.id.desc()).limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].id if more and rows else None)


def export(session: Session, workspace_id: str, *, role: str | None, since: datetime | None = None,
           actor: str | None = None) -> Iterator[str]:
    """JSON Lines, oldest first, read a bounded page at a time."""
    require_reader(role)
    base = _query(session, workspace_id, since=since, actor=actor, action=None)
    after = 0
    while True:
        rows = list(session.scalars(base.where(AuditEvent.id > after).order_by(AuditEvent.id).limit(PAGE_MAX)))
        for row in rows:
            yield json.dumps(describe(row), ensure_ascii=False) + "\n"
        if len(rows) < PAGE_MAX:
            return
        after = rows[-1].id


def describe(event: AuditEvent) -> dict[str, Any]:
    return {"id": event.id, "at": event.at.isoformat(), "workspace_id": event.workspace_id,
            "actor_id": event.actor_id, "actor": event.actor_name, "action": event.action,
            "target": event.target, "detail": event.detail, "address": event.address}


def retention_days() -> int | None:
    """PREDICTORX_AUDIT_RETENTION_DAYS (default 365); 0 keeps every event for ever."""
    raw = os.environ.get(RETENTION_ENV, "").strip()
    try:
        days = int(raw) if raw else DEFAULT_RETENTION_DAYS
    except ValueError:
        days = DEFAULT_RETENTION_DAYS
    return days if days > 0 else None


def _cutoff(now: datetime | None) -> datetime | None:
    days = retention_days()
    return None if days is None else (now or utcnow()) - timedelta(days=days)


def prune_due(session: Session, *, now: datetime | None = None) -> bool:
    """Whether `prune` has anything to delete (a read: an idle server writes nothing)."""
    cutoff = _cutoff(now)
    return cutoff is not None and session.scalar(select(AuditEvent.id).where(AuditEvent.at < cutoff).limit(1)) is not None


def prune(session: Session, *, now: datetime | None = None) -> int:
    """Delete events older than the retention; how many."""
    cutoff = _cutoff(now)
    if cutoff is None:
        return 0
    return getattr(session.execute(delete(AuditEvent).where(AuditEvent.at < cutoff)), "rowcount", 0) or 0
