"""The server's outbound notifier (issue 27 §4): a background job of each server process that sends
due deliveries off the request path (service/notify_deliveries.py claims them — once across
replicas — and service/notify_send.py sends them). It sleeps until the earliest delivery is due,
or until a write queues one (`notify_pending`, a notice every server process hears: NOTIFY on
PostgreSQL), or at most IDLE seconds."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from fastapi.concurrency import run_in_threadpool

from ..service import notify_deliveries as deliveries
from ..service.notify_send import send
from ..store.schema import utcnow
from .state import AppState

log = logging.getLogger("predictorx.notifier")
NOTICE = "notify_pending"
IDLE = 60.0


def deliver_due(state: AppState, now: datetime | None = None) -> int:
    """One round: fold due digests, claim up to a batch, send each, record each. How many were sent."""
    now = now or utcnow()
    with state.read() as s:  # a read first: nothing due, nothing written (an idle server stays idle)
        due = deliveries.next_due(s, stale_claims=True)
    if due is None or due > now:
        return 0
    with state.write() as s:
        deliveries.fold_digests(s, now)
        claimed = deliveries.claim(s, now)
    for c in claimed:
        outcome = send(c)
        with state.write() as s:
            deliveries.record(s, c.id, outcome, utcnow())
        if not outcome.ok:
            log.info("delivery %s (%s) not delivered: %s", c.id, c.event, outcome.error)
    return len(claimed)


def seconds_to_next(state: AppState) -> float:
    with state.read() as s:
        due = deliveries.next_due(s)
    if due is None:
        return IDLE
    return min(IDLE, max(0.0, (due - utcnow()).total_seconds()))


async def run(state: AppState) -> None:
    wake = asyncio.Event()
    state.hub.on_notice(NOTICE, wake.set)
    while True:
        try:
            while await run_in_threadpool(deliver_due, state) >= deliveries.BATCH:
                pass  # a full batch: there may be more due at once
            delay = await run_in_threadpool(seconds_to_next, state)
        except asyncio.CancelledError:
            raise
        except Exception:  # the notifier must outlive a bad moment (a database restart)
            log.exception("notification round failed")
            delay = 5.0
        try:
            await asyncio.wait_for(wake.wait(), timeout=max(delay, 0.05))
        except asyncio.TimeoutError:
            pass
        wake.clear()
