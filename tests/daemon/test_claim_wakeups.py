"""A freed slot asks the server for work only when work may be waiting for it (issue 30): while the
push connection is up, a run's end is followed by the finish's own claim (`claim_next`) and the
pushes, not by an empty claim of its own; work announced while every slot was busy is still
claimed as soon as one frees, and with the push down a freed slot looks at once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from predictorx.daemon.main import Daemon
from predictorx.protocol import Event

WAIT_S = 30.0  # generous: a loaded 2-core machine


class _Queue:
    """The server's claim: hands out what is queued, records every request."""

    def __init__(self) -> None:
        self.queued: list[str] = []
        self.claims: list[int] = []
        self.asked = asyncio.Event()

    async def claim(self, limit: int, task_id: str | None = None) -> list[dict[str, Any]]:
        self.claims.append(limit)
        self.asked.set()
        return self._take(limit)

    def _take(self, limit: int) -> list[dict[str, Any]]:
        given, self.queued = self.queued[:limit], self.queued[limit:]
        return [{"task": {"id": t}} for t in given]

    async def finish(self, task_id: str, claim_next: int = 0, **fields: Any) -> dict[str, Any]:
        return {"claimed": self._take(claim_next)}  # the finish claims the next in its transaction


async def _until(condition: Any, what: str) -> None:
    async with asyncio.timeout(WAIT_S):
        while not condition():
            await asyncio.sleep(0)  # yields to the claim loop; the condition is what ends the wait
    assert condition(), what


@pytest.fixture(params=[1, 4])
async def daemon(tmp_path: Path, request: Any) -> Any:
    api = _Queue()
    d = Daemon(api, name="host", max_tasks=request.param, workspaces_root=tmp_path / "ws")  # type: ignore[arg-type]
    d.safety_poll_interval = d.poll_interval = 3600.0  # only wake-ups drive claims here
    started: list[str] = []

    def start(item: dict[str, Any]) -> None:  # a run that holds its slot until the test ends it
        started.append(item["task"]["id"])
        d.busy_slots += 1
    d._start = start  # type: ignore[method-assign]
    d._push_connected = True
    loop = asyncio.create_task(d._claim_loop())
    try:
        yield d, api, started
    finally:
        while not loop.done():  # (Python 3.11's wait_for can swallow a cancel that meets its wake-up)
            loop.cancel()
            await asyncio.wait([loop], timeout=0.1)


async def _settle(api: _Queue) -> None:
    """Give the claim loop every chance to ask (it would within a few loop turns)."""
    for _ in range(50):
        await asyncio.sleep(0)


async def _run_ends(d: Daemon, task_id: str) -> None:
    """What a run's end does: its slot back, its finish (claiming the next), then done."""
    d.slot_released(finish_follows=True)
    await d.report_finish(task_id, {"status": "completed"})
    d._run_done(task_id)


async def test_one_claim_per_announcement_and_none_after_a_run_ends(daemon: Any) -> None:
    d, api, started = daemon
    api.queued = ["t-1"]
    await d._on_event({"type": Event.TASK_QUEUED})
    await _until(lambda: started == ["t-1"] and d.busy_slots == 1, "the announced task is claimed")
    await _settle(api)
    assert len(api.claims) == 1, "a claim answered with fewer than asked was followed by another"
    await _run_ends(d, "t-1")
    await _settle(api)
    assert len(api.claims) == 1, "a run's end with nothing announced asked the server again"


async def test_a_claim_that_filled_every_slot_looks_again_when_one_frees(daemon: Any) -> None:
    d, api, started = daemon
    api.queued = [f"t-{i}" for i in range(d.max_tasks + 1)]
    await d._on_event({"type": Event.TASK_QUEUED})
    await _until(lambda: len(started) == d.max_tasks, "every slot filled")
    d.slot_released()  # one waits for its folder: its slot goes to the queue's next
    await _until(lambda: len(started) == d.max_tasks + 1, "the next queued task is claimed")


async def test_work_announced_while_full_is_claimed_when_a_slot_frees(daemon: Any) -> None:
    d, api, started = daemon
    if d.max_tasks != 1:
        pytest.skip("one slot, filled by one task")
    api.queued = ["t-1"]
    await d._on_event({"type": Event.TASK_QUEUED})
    await _until(lambda: started == ["t-1"], "the first task is claimed")
    api.queued = ["t-2"]
    await d._on_event({"type": Event.TASK_QUEUED})  # every slot busy: not claimed yet
    await _settle(api)
    assert started == ["t-1"]
    await _run_ends(d, "t-1")
    await _until(lambda: started == ["t-1", "t-2"], "the task announced while full is claimed once a slot frees")


async def test_with_the_push_down_a_freed_slot_looks_at_once(daemon: Any) -> None:
    d, api, started = daemon
    api.queued = ["t-1"]
    await d._on_event({"type": Event.TASK_QUEUED})
    await _until(lambda: started == ["t-1"], "the first task is claimed")
    d._push_connected = False
    api.queued = ["t-2"]  # queued while the push was down: no announcement reaches the daemon
    d.slot_released()  # it waits for its folder
    await _until(lambda: started == ["t-1", "t-2"], "a freed slot claims while the push is down")


async def test_an_idle_daemon_whose_claim_failed_looks_again_without_a_new_announcement(daemon: Any) -> None:
    """The announcement is spent by the failed claim, and an idle daemon has no run whose end would
    look again: it retries by itself (before, it waited for the safety poll, 30 s, while a queue
    of work stood still — seen as a 200-task test timing out in CI)."""
    from predictorx.daemon.retry import ServerError

    d, api, started = daemon
    api.queued = ["t-1"]
    fail_once = [True]
    real_claim = api.claim

    async def claim(limit: int, task_id: str | None = None) -> list[dict[str, Any]]:
        if fail_once and fail_once.pop():
            api.claims.append(limit)
            raise ServerError(503, "the database is busy")
        return await real_claim(limit, task_id)
    api.claim = claim  # type: ignore[method-assign]
    await d._on_event({"type": Event.TASK_QUEUED})
    await _until(lambda: started == ["t-1"], "the task is claimed by a retry after the failed claim")
    assert len(api.claims) == 2


async def test_a_connected_daemon_claims_unasked_only_every_few_minutes(tmp_path: Path, monkeypatch: Any) -> None:
    """The safety look (work that became claimable without an announcement) was a claim every
    30 s: a write on the server twice a minute for ever, a tenth of an idle daemon's CPU. While
    the push is up it comes every 5 minutes; with the push down the daemon polls as before."""
    import predictorx.daemon.main as main

    d = Daemon(_Queue(), name="host", max_tasks=2, workspaces_root=tmp_path / "ws")  # type: ignore[arg-type]
    waited: list[float] = []
    real_wait_for = asyncio.wait_for

    async def wait_for(awaitable: Any, timeout: float) -> Any:
        waited.append(timeout)
        return await real_wait_for(awaitable, 0)  # no wake-up came: the loop looks unasked at once

    monkeypatch.setattr(main.asyncio, "wait_for", wait_for)
    d._push_connected = True
    loop = asyncio.create_task(d._claim_loop())
    try:
        await _until(lambda: len(waited) >= 2, "the claim loop to wait twice")
        assert min(waited) >= 300.0, waited
        d._push_connected = False
        seen = len(waited)
        await _until(lambda: len(waited) > seen + 1, "the claim loop to wait with the push down")
        assert waited[-1] == d.poll_interval
    finally:
        while not loop.done():
            loop.cancel()
            await asyncio.wait([loop], timeout=0.1)
