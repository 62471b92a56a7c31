"""The scheduler's use cases (server/autopilot_scheduler.py runs them): which cron autopilots are
due at a given clock time, firing one due slot, and when the next one is due."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.autopilot_schema import Autopilot
from . import autopilot_cron as cron
from . import autopilot_firing as firing
from . import issues


def _enabled():
    return (Autopilot.paused.is_(False), Autopilot.cron.is_not(None), Autopilot.next_due_at.is_not(None))


def due(session: Session, now: datetime) -> list[str]:
    return list(session.scalars(select(Autopilot.id).where(*_enabled(), Autopilot.next_due_at <= now)
                                .order_by(Autopilot.next_due_at, Autopilot.id)))


def next_due_at(session: Session) -> datetime | None:
    return session.scalar(select(func.min(Autopilot.next_due_at)).where(*_enabled()))


def _advance(row: Autopilot, now: datetime) -> tuple[datetime, datetime | None]:
    """Move the autopilot past its due slot at `now`: (the slot's due time, the first of the due
    times that passed unfired while no server ran, or None)."""
    assert row.cron is not None and row.next_due_at is not None
    slot_due = cron.latest_due(row.cron, row.timezone, now, since=row.next_due_at)
    first_missed = row.next_due_at if slot_due != row.next_due_at else None
    row.next_due_at = cron.next_due(row.cron, row.timezone, slot_due)
    return slot_due, first_missed


def _note_missed(claimed, first_missed: datetime | None) -> None:
    if first_missed is not None and claimed.detail:
        claimed.detail = (claimed.detail + f"; the due times since {first_missed.isoformat()} passed while no "
                          "server ran: fired once, for the latest")[:500]


def fire_due_at_once(session: Session, autopilot_ids: list[str], now: datetime, fired_at: datetime) -> list[str]:
    """Fire all these autopilots' due slots in a few statements, whatever their number: one SELECT
    … FOR UPDATE of the autopilots (on PostgreSQL another replica's batch waits here, then finds
    them no longer due), one multi-row claim of the slots, one reservation of issue numbers per
    workspace, then each issue. Any refusal or error raises: the caller rolls the whole batch back
    and fires them one by one (`fire_due`), where a refusal is that firing's failure. The ids of
    the firings."""
    rows = list(session.scalars(select(Autopilot).where(Autopilot.id.in_(autopilot_ids), *_enabled(),
                                                        Autopilot.next_due_at <= now)
                                .order_by(Autopilot.next_due_at, Autopilot.id).with_for_update()))
    slots = {row.id: _advance(row, now) for row in rows}
    claimed = firing.claim_many(session, [(row, f"cron:{slots[row.id][0].isoformat()}", slots[row.id][0])
                                          for row in rows], now=fired_at)
    filing = [row for row in rows if row.id in claimed]
    numbers: dict[str, int] = {}
    for workspace_id in sorted({row.workspace_id for row in filing}):  # (one lock order on every replica)
        numbers[workspace_id] = issues.reserve_numbers(
            session, workspace_id, sum(1 for row in filing if row.workspace_id == workspace_id))
    batch = []
    for row in filing:
        batch.append((row, claimed[row.id], numbers[row.workspace_id]))
        numbers[row.workspace_id] += 1
    firing.file_at_once(session, batch)
    for row in filing:
        _note_missed(claimed[row.id], slots[row.id][1])
    session.flush()
    return [claimed[row.id].id for row in filing]


def fire_due(session: Session, autopilot_id: str, now: datetime, fired_at: datetime | None = None) -> str | None:
    """Fire the autopilot's due slot if it is still due at `now` and nobody fired it: the firing's
    id, or None. Due times that all passed while no server ran fire once, for the latest of them.
    `fired_at`: the clock as this firing starts (later than `now` for the last of a batch)."""
    row = session.get(Autopilot, autopilot_id)
    if row is None or row.paused or not row.cron or row.next_due_at is None or row.next_due_at > now:
        return None
    slot_due, first_missed = _advance(row, now)
    claimed = firing.claim(session, row, slot=f"cron:{slot_due.isoformat()}", trigger="cron", due_at=slot_due,
                           now=fired_at or now)
    if claimed is None:
        return None  # another replica fired it (and moved next_due_at the same way)
    firing.fire(session, row, claimed)
    _note_missed(claimed, first_missed)
    return claimed.id
