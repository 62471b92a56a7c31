"""The scheduler's use cases (server/autopilot_scheduler.py runs them): which cron autopilots are
due at a given clock time, firing one due slot, and when the next one is due."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.autopilot_schema import Autopilot
from . import autopilot_cron as cron
from . import autopilot_firing as firing


def _enabled():
    return (Autopilot.paused.is_(False), Autopilot.cron.is_not(None), Autopilot.next_due_at.is_not(None))


def due(session: Session, now: datetime) -> list[str]:
    return list(session.scalars(select(Autopilot.id).where(*_enabled(), Autopilot.next_due_at <= now)
                                .order_by(Autopilot.next_due_at, Autopilot.id)))


def next_due_at(session: Session) -> datetime | None:
    return session.scalar(select(func.min(Autopilot.next_due_at)).where(*_enabled()))


def fire_due(session: Session, autopilot_id: str, now: datetime, fired_at: datetime | None = None) -> str | None:
    """Fire the autopilot's due slot if it is still due at `now` and nobody fired it: the firing's
    id, or None. Due times that all passed while no server ran fire once, for the latest of them.
    `fired_at`: the clock as this firing starts (later than `now` for the last of a batch)."""
    row = session.get(Autopilot, autopilot_id)
    if row is None or row.paused or not row.cron or row.next_due_at is None or row.next_due_at > now:
        return None
    slot_due = cron.latest_due(row.cron, row.timezone, now, since=row.next_due_at)
    first_missed = row.next_due_at if slot_due != row.next_due_at else None
    row.next_due_at = cron.next_due(row.cron, row.timezone, slot_due)
    claimed = firing.claim(session, row, slot=f"cron:{slot_due.isoformat()}", trigger="cron", due_at=slot_due,
                           now=fired_at or now)
    if claimed is None:
        return None  # another replica fired it (and moved next_due_at the same way)
    firing.fire(session, row, claimed)
    if first_missed is not None and claimed.detail:
        claimed.detail = (claimed.detail + f"; the due times since {first_missed.isoformat()} passed while no "
                          "server ran: fired once, for the latest")[:500]
    return claimed.id
