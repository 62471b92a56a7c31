"""The audit log (issue 28 §4): an append-only record of security-relevant events.

`record(session, …)` is the one function every audited use case calls, in the same transaction as
the change it records: the change and its record commit together or not at all, and each audited
action writes exactly one row. A record holds who (the actor's id and their name then), what (an
action from ACTIONS, a target, a small `detail` — names and roles, never a secret's value), when
and from which address. Rows are never changed (a trigger refuses an UPDATE, migration 0022); only
the retention (`prune`, run hourly by the server) deletes rows older than the workspace's retention
(its owners set it, never below PREDICTORX_AUDIT_RETENTION_MIN_DAYS) or the server's
PREDICTORX_AUDIT_RETENTION_DAYS; a person's sign-ins, which belong to no workspace, by the server's.

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

from ..store.schema import AuditEvent, Member, User, Workspace, utcnow
from .errors import Forbidden, Invalid

#: What is recorded, one name per audited action (docs/security.md lists them).
ACTIONS = frozenset({
    "sign_in", "token.create", "token.revoke",
    "member.add", "member.role", "member.remove", "member.email_proven",
    "forge.add", "forge.update", "forge.remove", "forge.webhook_secret",
    "secret.set", "secret.unset", "secret.grant", "secret.revoke",
    "agent.sandbox", "merge", "oidc.configure", "budget.set", "budget.remove", "audit.retention", "issue.delete",
    "autopilot.create", "autopilot.reschedule", "autopilot.pause", "autopilot.resume", "autopilot.remove",
    "autopilot.rotate_url",
    "autopilot.fire", "autopilot.replay", "autopilot.paused",
    "notify.add", "notify.update", "notify.remove",
})
RETENTION_ENV = "PREDICTORX_AUDIT_RETENTION_DAYS"
DEFAULT_RETENTION_DAYS = 365
#: The shortest retention a workspace owner may set: an owner cannot erase last month's record of
#: what they did by shortening it to a day (the server's operator sets this floor).
MIN_RETENTION_ENV = "PREDICTORX_AUDIT_RETENTION_MIN_DAYS"
DEFAULT_MIN_RETENTION_DAYS = 30
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


def _env_days(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


def retention_days() -> int | None:
    """The server's retention: PREDICTORX_AUDIT_RETENTION_DAYS (default 365); 0 keeps every event."""
    days = _env_days(RETENTION_ENV, DEFAULT_RETENTION_DAYS)
    return days if days > 0 else None


def minimum_days() -> int:
    return max(1, _env_days(MIN_RETENTION_ENV, DEFAULT_MIN_RETENTION_DAYS))


def retention_of(session: Session, workspace_id: str) -> dict[str, Any]:
    """A workspace's retention as people read it: days (None = for ever), whose setting it is,
    the server's default and the shortest an owner may set."""
    own = session.scalar(select(Workspace.audit_retention_days).where(Workspace.id == workspace_id))
    server = retention_days()
    days = server if own is None else (own or None)
    return {"days": days, "source": "server" if own is None else "workspace", "server_days": server,
            "minimum_days": minimum_days()}


def set_retention(session: Session, workspace_id: str, days: int | None, *, role: str | None,
                  actor_id: str | None, address: str | None = None) -> dict[str, Any]:
    """Owners set their workspace's retention: `days` ≥ the minimum, 0 for ever, None the server's."""
    if role != "owner":
        raise Forbidden("only a workspace owner sets how long the audit log is kept")
    floor = minimum_days()
    if days is not None and (days < 0 or 0 < days < floor):
        raise Invalid(f"the audit log is kept at least {floor} days on this server; give {floor} or more, "
                      "0 to keep every event, or nothing for the server's default")
    ws = session.get(Workspace, workspace_id)
    if ws is None:
        raise Invalid("no such workspace")
    before = ws.audit_retention_days
    ws.audit_retention_days = days
    record(session, workspace_id=workspace_id, actor_id=actor_id, action="audit.retention",
           target="audit log", detail={"from": before, "to": days}, address=address)
    return retention_of(session, workspace_id)


def _expired(session: Session, now: datetime | None) -> list[Any]:
    """Conditions for the rows past their retention: each overriding workspace's own, the
    server's for the rest (and for sign-ins, which belong to no workspace)."""
    now = now or utcnow()
    conditions = []
    server = retention_days()
    if server is not None:
        overridden = select(Workspace.id).where(Workspace.audit_retention_days.is_not(None))
        conditions.append(and_(AuditEvent.at < now - timedelta(days=server),
                               or_(AuditEvent.workspace_id.is_(None), AuditEvent.workspace_id.not_in(overridden))))
    for ws_id, days in session.execute(select(Workspace.id, Workspace.audit_retention_days)
                                       .where(Workspace.audit_retention_days > 0)).all():
        conditions.append(and_(AuditEvent.workspace_id == ws_id, AuditEvent.at < now - timedelta(days=days or 0)))
    return conditions


def prune_due(session: Session, *, now: datetime | None = None) -> bool:
    """Whether `prune` has anything to delete (a read: an idle server writes nothing)."""
    return any(session.scalar(select(AuditEvent.id).where(c).limit(1)) is not None for c in _expired(session, now))


def prune(session: Session, *, now: datetime | None = None) -> int:
    """Delete events older than their retention; how many."""
    return sum(getattr(session.execute(delete(AuditEvent).where(c)), "rowcount", 0) or 0
               for c in _expired(session, now))
