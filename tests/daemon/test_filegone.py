"""A wait for a file to go (git's index.lock, runner._wait_for_git) ends when it goes — removed, or
renamed away as git does — woken by inotify rather than by looking again every 0.2 s; it gives
up after its timeout; without inotify it still ends, by looking."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from predictorx.daemon import filegone, privatescan

WAIT_S = 30.0  # generous: a loaded 2-core machine


async def _started(waiter: asyncio.Task) -> None:
    for _ in range(20):  # a few loop turns: the waiter has looked and is waiting
        await asyncio.sleep(0)
    assert not waiter.done()


@pytest.mark.parametrize("how", ["unlink", "rename"])
async def test_the_wait_ends_when_the_file_goes(tmp_path: Path, how: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filegone, "FALLBACK_POLL_S", 3600.0)  # only inotify could end it in time
    lock = tmp_path / "index.lock"
    lock.write_text("")
    waiter = asyncio.create_task(filegone.until_gone(lock, timeout=WAIT_S))
    await _started(waiter)
    if how == "unlink":
        lock.unlink()
    else:
        os.rename(lock, tmp_path / "index")  # what git does when it is done
    assert await asyncio.wait_for(waiter, WAIT_S) is True


async def test_other_changes_in_the_folder_do_not_end_it_and_it_gives_up_in_time(tmp_path: Path) -> None:
    lock = tmp_path / "index.lock"
    lock.write_text("")
    waiter = asyncio.create_task(filegone.until_gone(lock, timeout=1.0))
    await _started(waiter)
    (tmp_path / "other").write_text("x")  # wakes the watch: the lock is looked at again, still there
    assert await asyncio.wait_for(waiter, WAIT_S) is False
    assert lock.exists()


async def test_a_file_already_gone_needs_no_wait(tmp_path: Path) -> None:
    assert await filegone.until_gone(tmp_path / "index.lock", timeout=0) is True


async def test_without_inotify_the_wait_still_ends_when_the_file_goes(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(privatescan, "inotify_libc", lambda: None)
    monkeypatch.setattr(filegone, "FALLBACK_POLL_S", 0.05)
    lock = tmp_path / "index.lock"
    lock.write_text("")
    waiter = asyncio.create_task(filegone.until_gone(lock, timeout=WAIT_S))
    await _started(waiter)
    lock.unlink()
    assert await asyncio.wait_for(waiter, WAIT_S) is True
