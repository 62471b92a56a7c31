"""The autopilot scheduler: a small background task of every server process (started and stopped
with the app, server/app.py). It sleeps until the earliest next due time of any cron autopilot —
at most MAX_SLEEP, and less when its clock must be polled — or until an autopilot changes (the
hub's "autopilots_changed" notice, from any replica over LISTEN/NOTIFY), then fires what is due.

Every replica runs one; each due slot fires once because the firing row is the claim
(service/autopilot_firing.py). Ended runs of firings are settled on the same ticks."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from fastapi.concurrency import run_in_threadpool

from ..service import autopilot_firing, autopilot_schedule, classification
from .autopilot_clock import Clock, configured
from .state import AppState

log = logging.getLogger("predictorx.autopilot")

MAX_SLEEP = 30.0
CHANGED = "autopilots_changed"


class Scheduler:
    def __init__(self, state: AppState, clock: Clock | None = None):
        self.state = state
        self.clock = clock or configured()
        self.last_tick: datetime | None = None
        self.fired = 0
        self._wake = asyncio.Event()

    def wake(self) -> None:
        self._wake.set()

    def tick(self) -> float:
        """Fire what is due now; settle ended runs. Seconds until the next due time."""
        now = self.clock.now()
        with self.state.read() as s:
            due = autopilot_schedule.due(s, now)
            running = autopilot_firing.has_running(s)
        if due:
            self._fire(due, now)
        if running:
            with self.state.write() as s:
                autopilot_firing.settle(s)
        with self.state.read() as s:
            upcoming = autopilot_schedule.next_due_at(s)
        self.last_tick = now
        wait = MAX_SLEEP if upcoming is None else (upcoming - now).total_seconds()
        if running:
            wait = min(wait, 5.0)  # a run's end is not announced here: look again soon
        return wait

    def _fire(self, due: list[str], now: datetime) -> None:
        """All that is due in one transaction (one commit, not one per autopilot: they are often due
        at the same second), in the same order on every replica (no lock-order deadlock).

        First at once, in a few statements whatever their number (autopilot_schedule.fire_due_at_once:
        30 due together cost ~4 round trips each instead of ~13, which is what made the last of them
        late on a loaded PostgreSQL). If any of them is refused or fails, that batch is rolled back
        whole and they fire one by one, each in a savepoint: a refusal is then one firing's failure,
        recorded inside; anything else rolls the batch back and the next tick tries again."""
        try:
            with self.state.write() as s:
                self.fired += len(autopilot_schedule.fire_due_at_once(s, due, now, fired_at=self.clock.now()))
            return
        except Exception as e:  # noqa: BLE001 — refused or failed: one by one below, each its own outcome
            log.info("autopilots %s: firing at once did not go through (%s); one by one", ", ".join(due), e)
        try:
            with self.state.write() as s:
                fired = sum(1 for autopilot_id in due
                            if autopilot_schedule.fire_due(s, autopilot_id, now, fired_at=self.clock.now()))
            self.fired += fired
        except Exception:  # the scheduler must outlive a bad moment
            log.exception("autopilots %s: the due slots could not be fired", ", ".join(due))

    async def run(self) -> None:
        self.state.hub.on_notice(CHANGED, self.wake)
        try:  # what the first issue filed would build on the spot (a firing due soon after start)
            await run_in_threadpool(classification.warm)
        except Exception:  # (a broken library is reported where issues are filed)
            log.exception("warming the classifier failed")
        while True:
            self._wake.clear()  # (before the tick: a change during it wakes the next sleep at once)
            try:
                wait = await run_in_threadpool(self.tick)
            except Exception:  # the scheduler must outlive a bad moment (the database restarting)
                log.exception("autopilot scheduler tick failed")
                wait = 5.0
            wait = max(0.0, min(wait, MAX_SLEEP))
            if self.clock.poll is not None:
                wait = min(wait, self.clock.poll)
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=wait)
            except asyncio.TimeoutError:
                pass

    def describe(self) -> dict:
        return {"last_tick": self.last_tick.isoformat() if self.last_tick else None, "fired": self.fired,
                "clock": type(self.clock).__name__}
