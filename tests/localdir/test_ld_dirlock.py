"""The in-place lock (R-LD-4, R-LD-5): one task per real folder, FIFO, cancellable, cross-process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from predictorx.daemon.dirlock import DirLocks, lock_key, wait_reason

# A second "daemon": takes the lock on a folder, says so, and holds it until killed or told.
HOLDER_SCRIPT = textwrap.dedent("""
    import asyncio, sys
    from predictorx.daemon.dirlock import DirLocks
    async def main():
        locks = DirLocks(sys.argv[1])
        async with locks.acquire(sys.argv[2], sys.argv[3], "main checkout"):
            print("held", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    asyncio.run(main())
""")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    return tmp_path / "project"


@pytest.fixture
def locks(tmp_path: Path) -> DirLocks:
    return DirLocks(tmp_path / "state" / "locks")


async def until(condition, timeout: float = 30.0) -> None:
    """Wait, a loop turn at a time, until `condition()` holds; a loaded machine may take a while."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.001)


def queued(locks: DirLocks, folder: Path) -> list[str]:
    slot = locks._slots.get(lock_key(folder))
    return [w.task_id for w in slot.queue] if slot else []


def start_holder(lock_dir: Path, folder: Path, task: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER_SCRIPT, str(lock_dir), str(folder), task],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


async def test_a_free_lock_is_taken_at_once_and_records_its_holder(locks: DirLocks, folder: Path) -> None:
    calls: list[str] = []
    async with locks.acquire(folder, "task-1", "main checkout", on_wait=calls.append):
        holder = locks.holder(folder)
        assert holder and holder.task_id == "task-1" and holder.label == "main checkout"
        sidecar = json.loads((locks.lock_dir / f"{lock_key(folder)}.holder.json").read_text())
        assert sidecar["task_id"] == "task-1" and sidecar["pid"] == os.getpid()
    assert calls == []
    assert locks.holder(folder) is None
    assert not (locks.lock_dir / f"{lock_key(folder)}.holder.json").exists()


async def test_two_symlinks_to_one_folder_are_serialised(locks: DirLocks, folder: Path, tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(folder)
    (tmp_path / "b").symlink_to(folder)
    events: list[str] = []
    reasons: list[str] = []
    first_in = asyncio.Event()

    async def task(name: str, via: Path) -> None:
        async with locks.acquire(via, name, "big game", on_wait=reasons.append):
            events.append(f"{name} in")
            first_in.set()
            await asyncio.sleep(0.05)
            events.append(f"{name} out")

    t1 = asyncio.create_task(task("task-1", tmp_path / "a"))
    await first_in.wait()
    await task("task-2", tmp_path / "b")
    await t1
    assert events == ["task-1 in", "task-1 out", "task-2 in", "task-2 out"]
    assert reasons == [wait_reason("big game", "task-1")]
    assert "big game" in reasons[0] and "task-1" in reasons[0]
    assert str(folder) not in reasons[0] and "/" not in reasons[0]  # never the absolute path


async def test_twenty_waiters_run_one_at_a_time_in_order_of_arrival(locks: DirLocks, folder: Path) -> None:
    order: list[int] = []
    reasons: dict[int, list[str]] = {}
    everyone_queued = asyncio.Event()
    inside = 0

    async def task(i: int) -> None:
        nonlocal inside
        async with locks.acquire(folder, f"task-{i}", "main",
                                 on_wait=lambda r, i=i: reasons.setdefault(i, []).append(r)):
            inside += 1
            assert inside == 1
            order.append(i)
            if i == 0:
                await everyone_queued.wait()
            await asyncio.sleep(0.002)
            inside -= 1

    tasks = []
    for i in range(20):
        tasks.append(asyncio.create_task(task(i)))
        await asyncio.sleep(0)  # arrival order is creation order
    await until(lambda: len(queued(locks, folder)) == 19)
    assert queued(locks, folder) == [f"task-{i}" for i in range(1, 20)]
    everyone_queued.set()
    await asyncio.gather(*tasks)
    assert order == list(range(20))
    assert list(reasons) == list(range(1, 20))  # everyone but the first waited, in order
    # each waiter heard about every holder ahead of it, as the holder changed
    assert reasons[19] == [wait_reason("main", f"task-{i}") for i in range(19)]


async def test_cancelling_a_waiter_removes_it_at_once(locks: DirLocks, folder: Path) -> None:
    release = asyncio.Event()
    order: list[str] = []

    async def task(name: str, hold: asyncio.Event | None = None) -> None:
        async with locks.acquire(folder, name, "main"):
            order.append(name)
            if hold:
                await hold.wait()

    holder = asyncio.create_task(task("holder", release))
    await until(lambda: order == ["holder"])
    doomed = asyncio.create_task(task("doomed"))
    last = asyncio.create_task(task("last"))
    await until(lambda: queued(locks, folder) == ["doomed", "last"])
    t0 = time.monotonic()
    doomed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert time.monotonic() - t0 < 0.5  # one turn of the loop; generous for a loaded machine
    assert queued(locks, folder) == ["last"]
    release.set()
    await asyncio.gather(holder, last)
    assert order == ["holder", "last"]


async def test_cancelling_the_holder_lets_the_next_start(locks: DirLocks, folder: Path) -> None:
    started = asyncio.Event()

    async def hold_forever() -> None:
        async with locks.acquire(folder, "running", "main"):
            started.set()
            await asyncio.sleep(3600)

    running = asyncio.create_task(hold_forever())
    await started.wait()
    nxt = asyncio.create_task(_enter(locks, folder, "next"))
    await until(lambda: queued(locks, folder) == ["next"])
    running.cancel()
    assert await asyncio.wait_for(nxt, 1) == "next"


async def _enter(locks: DirLocks, folder: Path, name: str) -> str:
    async with locks.acquire(folder, name, "main"):
        return name


async def test_the_lock_works_across_processes_and_dies_with_its_holder(locks: DirLocks, folder: Path) -> None:
    proc = start_holder(locks.lock_dir, folder, "task-other-daemon")
    try:
        reasons: list[str] = []
        waiter = asyncio.create_task(_enter_with(locks, folder, "task-here", reasons))
        await until(lambda: bool(reasons))  # it found the lock taken and said by whom
        assert not waiter.done()
        assert reasons == [wait_reason("main checkout", "task-other-daemon")]
        assert locks.holder(folder).pid == proc.pid
        t0 = time.monotonic()
        proc.send_signal(signal.SIGKILL)  # no release: the kernel drops the flock
        assert await asyncio.wait_for(waiter, 5) == "task-here"
        assert time.monotonic() - t0 < 2.0
    finally:
        proc.kill()
        proc.wait()


async def _enter_with(locks: DirLocks, folder: Path, name: str, reasons: list[str]) -> str:
    async def report(reason: str) -> None:  # on_wait may be async, as the daemon's will be
        reasons.append(reason)

    async with locks.acquire(folder, name, "main checkout", on_wait=report):
        return name


async def test_cancelling_the_polling_head_passes_polling_on(locks: DirLocks, folder: Path) -> None:
    proc = start_holder(locks.lock_dir, folder, "elsewhere")
    try:
        head = asyncio.create_task(_enter(locks, folder, "head"))
        second = asyncio.create_task(_enter(locks, folder, "second"))
        await until(lambda: queued(locks, folder) == ["head", "second"])
        head.cancel()
        await until(lambda: queued(locks, folder) == ["second"])
        proc.stdin.write("release\n")
        proc.stdin.flush()
        assert await asyncio.wait_for(second, 5) == "second"
        assert head.cancelled()
    finally:
        proc.kill()
        proc.wait()


async def test_a_restarted_daemon_reports_and_clears_a_dead_holder(tmp_path: Path, folder: Path) -> None:
    lock_dir = tmp_path / "state" / "locks"
    proc = start_holder(lock_dir, folder, "task-crashed")
    live = DirLocks(lock_dir).recover()
    assert live and "still held" in live[0]
    proc.kill()
    proc.wait()
    said = DirLocks(lock_dir).recover()
    assert len(said) == 1 and "task-crashed" in said[0] and "gone" in said[0]
    assert not list(lock_dir.glob("*.holder.json"))
    assert DirLocks(lock_dir).recover() == []


async def test_in_process_handoff_is_immediate(locks: DirLocks, folder: Path) -> None:
    latencies: list[float] = []
    released_at = 0.0

    async def task(i: int) -> None:
        nonlocal released_at
        async with locks.acquire(folder, f"t{i}", "main"):
            if i:
                latencies.append(time.perf_counter() - released_at)
            await asyncio.sleep(0.001)
            released_at = time.perf_counter()

    await asyncio.gather(*(task(i) for i in range(30)))
    latencies.sort()
    assert latencies[len(latencies) // 2] < 0.05
