"""The outbound queue (issue 27 §4): one `notify_delivery` row per message to a channel, sent off
the request path by the server's notifier (server/notifier.py). A server process claims due rows —
`FOR UPDATE SKIP LOCKED` on PostgreSQL, so with several replicas each row is sent by one of them;
SQLite's writes are one at a time anyway — marks them `sending` for a lease, sends them outside any
transaction, and records each attempt (the delivery log). A failure or a 5xx/408/429 answer is
retried with exponential backoff; a digest channel's messages wait for the next hour or UTC day and
go as one."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from ..store.inbox_schema import NotifyAttempt, NotifyChannel, NotifyDelivery
from ..store.schema import utcnow
from . import secretbox
from .errors import NotFound
from .events import emit

#: Claimed rows not finished by then (a process that died mid-send) are claimed again.
LEASE = timedelta(seconds=120)
#: The most rows one round claims: the queue is the table, the work in memory stays bounded.
BATCH = 20
#: The log kept per delivery, newest first.
LOG_LIMIT = 50
RETRYABLE = {408, 425, 429}


def retry_base() -> float:
    return float(os.environ.get("PREDICTORX_NOTIFY_RETRY_BASE", "10"))


def max_attempts() -> int:
    return int(os.environ.get("PREDICTORX_NOTIFY_MAX_ATTEMPTS", "6"))


def digest_due(digest: str, now: datetime) -> datetime:
    """When a digest channel's message goes: the next full hour, or the next UTC midnight."""
    if digest == "hourly":
        return now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    if digest == "daily":
        return now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    return now


def enqueue(session: Session, channel: NotifyChannel, event: str, payload: dict[str, Any],
            *, now: datetime | None = None) -> NotifyDelivery:
    now = now or utcnow()
    row = NotifyDelivery(workspace_id=channel.workspace_id, channel_id=channel.id, event=event, payload=payload,
                         status="pending", attempts=0, next_at=digest_due(channel.digest, now), created_at=now)
    session.add(row)
    session.flush()
    emit(session, channel.workspace_id, "notify_pending")  # wakes the notifier of every server process
    return row


def fold_digests(session: Session, now: datetime) -> int:
    """Due pending messages of digest channels become one `digest` delivery per channel."""
    rows = list(session.scalars(
        select(NotifyDelivery).join(NotifyChannel, NotifyChannel.id == NotifyDelivery.channel_id)
        .where(NotifyDelivery.status == "pending", NotifyDelivery.next_at <= now, NotifyDelivery.attempts == 0,
               NotifyDelivery.event != "digest", NotifyChannel.digest != "off")
        .order_by(NotifyDelivery.created_at).with_for_update(skip_locked=True).limit(1000)))
    by_channel: dict[str, list[NotifyDelivery]] = {}
    for row in rows:
        by_channel.setdefault(row.channel_id, []).append(row)
    for channel_id, group in by_channel.items():
        digest = NotifyDelivery(workspace_id=group[0].workspace_id, channel_id=channel_id, event="digest",
                                payload={"event": "digest", "count": len(group),
                                         "items": [g.payload for g in group][:200]},
                                status="pending", attempts=0, next_at=now, created_at=now)
        session.add(digest)
        session.flush()
        for g in group:
            g.status, g.redelivery_of = "digested", digest.id
    return len(by_channel)


@dataclass
class Claimed:
    """A delivery taken by this process, with what sending it needs (unsealed in memory only)."""
    id: str
    delivery_key: str
    event: str
    payload: dict[str, Any]
    kind: str
    url: str
    secret: str | None
    attempts: int


def claim(session: Session, now: datetime, limit: int = BATCH) -> list[Claimed]:
    due = or_((NotifyDelivery.status == "pending") & (NotifyDelivery.next_at <= now),
              (NotifyDelivery.status == "sending") & (NotifyDelivery.claimed_until < now))
    rows = list(session.scalars(select(NotifyDelivery).where(due).order_by(NotifyDelivery.next_at)
                                .with_for_update(skip_locked=True).limit(limit)))
    out = []
    for row in rows:
        channel = session.get(NotifyChannel, row.channel_id)
        row.status, row.claimed_until = "sending", now + LEASE
        if channel is None or not channel.enabled:
            row.status, row.last_error = "failed", "the channel is off or removed"
            continue
        try:
            url = secretbox.unseal_from(channel, "url_sealed")
            secret = secretbox.unseal_from(channel, "secret_sealed") if channel.secret_sealed else None
        except secretbox.SecretError as e:
            row.status, row.last_error = "failed", str(e)[:500]
            continue
        out.append(Claimed(row.id, row.redelivery_of if row.event != "digest" and row.redelivery_of else row.id,
                           row.event, dict(row.payload), channel.kind, url, secret, row.attempts))
    session.flush()
    return out


@dataclass
class Outcome:
    ok: bool
    status_code: int | None = None
    excerpt: str = ""
    error: str | None = None
    duration_ms: int = 0
    #: Refused before sending (a private address, a URL that cannot be one): trying again changes nothing.
    refused: bool = False

    @property
    def retryable(self) -> bool:
        return not self.ok and not self.refused and (self.status_code is None or self.status_code >= 500
                                                     or self.status_code in RETRYABLE)


def record(session: Session, delivery_id: str, outcome: Outcome, now: datetime) -> NotifyDelivery | None:
    row = session.get(NotifyDelivery, delivery_id)
    if row is None:  # its channel was removed meanwhile
        return None
    row.attempts += 1
    session.add(NotifyAttempt(delivery_id=row.id, at=now, ok=outcome.ok, status_code=outcome.status_code,
                              excerpt=outcome.excerpt[:500], error=(outcome.error or None) and outcome.error[:500],
                              duration_ms=outcome.duration_ms))
    row.last_status, row.last_error, row.claimed_until = outcome.status_code, outcome.error, None
    if outcome.ok:
        row.status, row.delivered_at = "delivered", now
    elif outcome.retryable and row.attempts < max_attempts():
        row.status, row.next_at = "pending", now + timedelta(seconds=retry_base() * 2 ** (row.attempts - 1))
    else:
        row.status = "failed"
    session.flush()
    return row


def next_due(session: Session, *, stale_claims: bool = False) -> datetime | None:
    """When the earliest pending delivery is due (the notifier sleeps until then, or a wake-up);
    `stale_claims`: or the earliest lease of a claim that may have died with its process."""
    due = session.scalar(select(func.min(NotifyDelivery.next_at)).where(NotifyDelivery.status == "pending"))
    if stale_claims:
        lease = session.scalar(select(func.min(NotifyDelivery.claimed_until)).where(
            NotifyDelivery.status == "sending"))
        due = min((d for d in (due, lease) if d is not None), default=None)
    return due


def of_channel(session: Session, channel: NotifyChannel, limit: int = LOG_LIMIT) -> list[dict[str, Any]]:
    rows = list(session.scalars(select(NotifyDelivery).where(NotifyDelivery.channel_id == channel.id)
                                .order_by(NotifyDelivery.created_at.desc(), NotifyDelivery.id.desc()).limit(limit)))
    attempts: dict[str, list[NotifyAttempt]] = {}
    if rows:
        for a in session.scalars(select(NotifyAttempt).where(NotifyAttempt.delivery_id.in_([r.id for r in rows]))
                                 .order_by(NotifyAttempt.at)):
            attempts.setdefault(a.delivery_id, []).append(a)
    return [describe(r, attempts.get(r.id, [])) for r in rows]


def get(session: Session, channel_ids: set[str], delivery_id: str) -> NotifyDelivery:
    row = session.get(NotifyDelivery, delivery_id)
    if row is None or row.channel_id not in channel_ids:
        raise NotFound(f"delivery {delivery_id} not found")
    return row


def redeliver(session: Session, row: NotifyDelivery) -> NotifyDelivery:
    """The same message again, as a new delivery (the receiver sees the original's delivery id)."""
    channel = session.get(NotifyChannel, row.channel_id)
    copy = NotifyDelivery(workspace_id=row.workspace_id, channel_id=row.channel_id, event=row.event,
                          payload=row.payload, status="pending", attempts=0, next_at=utcnow(),
                          redelivery_of=row.redelivery_of or row.id if row.event != "digest" else None)
    session.add(copy)
    session.flush()
    if channel is not None:
        emit(session, channel.workspace_id, "notify_pending")
    return copy


def describe(row: NotifyDelivery, attempts: list[NotifyAttempt] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.id, "channel_id": row.channel_id, "event": row.event, "status": row.status,
        "attempts": row.attempts, "last_status": row.last_status, "last_error": row.last_error,
        "redelivery_of": row.redelivery_of, "created_at": row.created_at.isoformat() if row.created_at else None,
        "next_at": row.next_at.isoformat() if row.next_at and row.status == "pending" else None,
        "delivered_at": row.delivered_at.isoformat() if row.delivered_at else None}
    if attempts is not None:
        out["log"] = [{"at": a.at.isoformat(), "ok": a.ok, "status_code": a.status_code, "excerpt": a.excerpt,
                       "error": a.error, "duration_ms": a.duration_ms} for a in attempts]
    return out
