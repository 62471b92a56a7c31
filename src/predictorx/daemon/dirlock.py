"""The in-place lock: one task at a time per real folder (R-LD-4, R-LD-5).

One `DirLocks` per daemon process, used from its event loop:

    locks = DirLocks(state_dir / "locks")
    async with locks.acquire(real_path, task_id, label, on_wait=set_waiting):
        ...  # the agent runs in the folder

Across processes the lock is `fcntl.flock` on `<lock_dir>/<sha256(real path)>.lock`: two daemons
on one machine, or a restarted daemon, see the same lock, and the kernel drops it when its holder
dies. A sidecar `<key>.holder.json` says which task holds it (task id, folder label, pid), so a
waiter in any process can say who it waits for without ever naming the absolute path.

Within a process waiters queue in order of arrival. When a holder leaves and someone here is
waiting, the flock is handed over directly (no unlock, no poll), so the next task starts at once and
no other process can slip in between. While a holder in another process has it, a thread waits in a
blocking flock for the head of the queue (no polling: a waiting task costs nothing) and hands the
lock over when the kernel gives it. Waiting has no time limit; cancelling a waiter removes it from
the queue immediately (a thread still blocked in flock lets go of the lock as soon as it gets it).

Cross-process order is not FIFO: a process keeps the lock while it has waiters of its own, and
another process's waiter gets it when the kernel hands it over.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import inspect
import json
import os
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

#: Only when a blocking flock failed (an I/O error): the head tries again this often.
POLL_INTERVAL = 1.0

OnWait = Callable[[str], Awaitable[None] | None]


@dataclass(frozen=True)
class Holder:
    """Who holds a folder's lock, as its sidecar says."""

    task_id: str
    label: str
    pid: int
    since: float


def lock_key(path: str | os.PathLike[str]) -> str:
    """The lock's name: sha256 of the real path, so symlinks to one folder share one lock."""
    return hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()


def wait_reason(label: str | None, holder_task_id: str | None) -> str:
    """The `wait_reason` shown while a task waits: the folder's label and the holding task."""
    folder = f"the local directory “{label}”" if label else "this project's local directory"
    who = f"task {holder_task_id} is working in it" if holder_task_id else "another task is working in it"
    return f"Waiting for {folder}: {who}. This task starts as soon as it is free."


@dataclass(eq=False)
class _Waiter:
    task_id: str
    label: str
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    granted: bool = False


@dataclass(eq=False)
class _Slot:
    """This process's view of one folder's lock."""

    key: str
    lock_path: Path
    holder_path: Path
    fd: int | None = None  # open while we hold the flock or try to get it
    holder: _Waiter | None = None
    queue: deque[_Waiter] = field(default_factory=deque)
    waiting_thread: bool = False  # a thread is blocked in flock for this slot
    thread_failed: bool = False  # its flock failed: the head tries again every poll_interval


class DirLocks:
    def __init__(self, lock_dir: str | os.PathLike[str], *, poll_interval: float = POLL_INTERVAL):
        self.lock_dir = Path(lock_dir)
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        self.poll_interval = poll_interval
        self._slots: dict[str, _Slot] = {}

    # --- public API ---------------------------------------------------------------------------

    @asynccontextmanager
    async def acquire(
        self, path: str | os.PathLike[str], task_id: str, label: str = "", *, on_wait: OnWait | None = None
    ) -> AsyncIterator[None]:
        """Hold the folder's lock for the body of `async with`.

        If the task has to wait, `on_wait(reason)` is called (sync or async) before waiting, and
        again whenever the reason changes (another task took the lock meanwhile), so the caller
        can set status `waiting_local_directory` with that `wait_reason`. It is never called when
        the lock is free at once. Cancel the awaiting task to leave the queue.
        """
        slot = self._slot(lock_key(path))
        me = _Waiter(task_id, label)
        slot.queue.append(me)
        try:
            await self._wait_turn(slot, me, on_wait)
        except BaseException:
            if me.granted:  # granted while the cancellation was on its way: pass it on
                self._release(slot, me)
            else:
                self._leave(slot, me)
            raise
        try:
            yield
        finally:
            self._release(slot, me)

    def holder(self, path: str | os.PathLike[str]) -> Holder | None:
        """Who holds the folder's lock right now, in any process; None if it is free."""
        key = lock_key(path)
        slot = self._slots.get(key)
        if slot is not None and slot.holder is not None:
            return Holder(slot.holder.task_id, slot.holder.label, os.getpid(), 0.0)
        if slot is not None and slot.queue:
            return self._read_holder(slot.holder_path)  # our head is polling: someone else has it
        probe = self._probe(key)
        return None if probe else self._read_holder(self.lock_dir / f"{key}.holder.json")

    def recover(self) -> list[str]:
        """At daemon start: report and clear holder records whose process is gone.

        The flocks themselves died with their processes; this removes the stale sidecars and says
        what happened, in sentences for the log.
        """
        said: list[str] = []
        for sidecar in sorted(self.lock_dir.glob("*.holder.json")):
            key = sidecar.name.split(".", 1)[0]
            if key in self._slots:
                continue
            info = self._read_holder(sidecar)
            who = f"task {info.task_id} on “{info.label}”" if info else "an unknown task"
            if self._probe(key, remove=sidecar):
                said.append(f"Released the in-place lock of {who}: the process that held it "
                            f"({info.pid if info else '?'}) is gone.")
            elif info:
                said.append(f"The in-place lock of {who} is still held by running process {info.pid}.")
        return said

    # --- waiting --------------------------------------------------------------------------------

    async def _wait_turn(self, slot: _Slot, me: _Waiter, on_wait: OnWait | None) -> None:
        reported: str | None = None
        while True:
            me.wake.clear()  # before looking, so a wake-up during the look is not lost
            if me.granted:
                return
            head = slot.queue[0] is me
            if head and slot.holder is None and self._try_flock(slot):
                slot.queue.popleft()
                self._grant(slot, me)
                return
            reason = self._reason(slot, me.label)
            if reason != reported:
                reported = reason
                if head:  # the holder changed behind our back: let the others say so too
                    for other in slot.queue:
                        if other is not me:
                            other.wake.set()
                if on_wait is not None:
                    result = on_wait(reason)
                    if inspect.isawaitable(result):
                        await result
                continue  # the callback may have awaited: look again
            if head and slot.holder is None and slot.thread_failed:
                slot.thread_failed = False
                try:
                    await asyncio.wait_for(me.wake.wait(), self.poll_interval)
                except TimeoutError:
                    pass
            else:
                if head and slot.holder is None:
                    self._wait_in_thread(slot)
                await me.wake.wait()

    def _reason(self, slot: _Slot, label: str) -> str:
        if slot.holder is not None:
            return wait_reason(label, slot.holder.task_id)
        info = self._read_holder(slot.holder_path)
        return wait_reason(label, info.task_id if info else None)

    # --- state changes (all synchronous: nothing interleaves inside them) ----------------------

    def _slot(self, key: str) -> _Slot:
        slot = self._slots.get(key)
        if slot is None:
            slot = _Slot(key, self.lock_dir / f"{key}.lock", self.lock_dir / f"{key}.holder.json")
            self._slots[key] = slot
        return slot

    def _try_flock(self, slot: _Slot) -> bool:
        if slot.fd is None:
            slot.fd = os.open(slot.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(slot.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _wait_in_thread(self, slot: _Slot) -> None:
        """Block in flock on a thread of its own (a fd of its own: flocks belong to open files),
        then hand the locked fd to the loop."""
        if slot.waiting_thread:
            return
        slot.waiting_thread = True
        loop = asyncio.get_running_loop()

        def block() -> None:
            fd: int | None = None
            try:
                fd = os.open(slot.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                if fd is not None:
                    os.close(fd)
                fd = None
            try:
                loop.call_soon_threadsafe(self._flock_came, slot, fd)
            except RuntimeError:  # the loop is gone (the daemon stopped)
                if fd is not None:
                    os.close(fd)

        threading.Thread(target=block, name="dirlock-wait", daemon=True).start()

    def _flock_came(self, slot: _Slot, fd: int | None) -> None:
        slot.waiting_thread = False
        if fd is None:
            slot.thread_failed = True
        elif self._slots.get(slot.key) is not slot or not slot.queue or slot.holder is not None:
            os.close(fd)  # no one here wants it any more (or we got it another way): let go
            return
        else:
            if slot.fd is not None:
                os.close(slot.fd)
            slot.fd = fd  # locked: the head's next try succeeds on it
        if slot.queue:
            slot.queue[0].wake.set()

    def _grant(self, slot: _Slot, w: _Waiter) -> None:
        w.granted = True
        slot.holder = w
        self._write_holder(slot, w)
        for other in (w, *slot.queue):  # the new holder runs; the rest refresh their reason
            other.wake.set()

    def _release(self, slot: _Slot, w: _Waiter) -> None:
        if slot.holder is not w:
            return
        slot.holder = None
        if slot.queue:  # direct handoff: keep the flock, the next task here runs now
            self._grant(slot, slot.queue.popleft())
            return
        try:
            slot.holder_path.unlink(missing_ok=True)  # before unlocking, so no one reads it stale
        finally:
            self._close(slot)

    def _leave(self, slot: _Slot, w: _Waiter) -> None:
        was_head = bool(slot.queue) and slot.queue[0] is w
        try:
            slot.queue.remove(w)
        except ValueError:
            pass
        if slot.queue:
            if was_head:
                slot.queue[0].wake.set()
        elif slot.holder is None:
            self._close(slot)

    def _close(self, slot: _Slot) -> None:
        if slot.fd is not None:
            os.close(slot.fd)  # closing drops our flock, if we had it
            slot.fd = None
        self._slots.pop(slot.key, None)

    # --- files ----------------------------------------------------------------------------------

    def _write_holder(self, slot: _Slot, w: _Waiter) -> None:
        data = {"task_id": w.task_id, "label": w.label, "pid": os.getpid(), "since": time.time()}
        tmp = slot.holder_path.with_name(f"{slot.key}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, slot.holder_path)  # atomic: readers see the old holder or the new one

    @staticmethod
    def _read_holder(path: Path) -> Holder | None:
        try:
            d = json.loads(path.read_text())
            return Holder(str(d["task_id"]), str(d.get("label", "")), int(d["pid"]), float(d["since"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _probe(self, key: str, remove: Path | None = None) -> bool:
        """True if the lock is free right now (taken and dropped again); optionally remove a
        stale file while we briefly hold it."""
        try:
            fd = os.open(self.lock_dir / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        try:
            if remove is not None:
                remove.unlink(missing_ok=True)
        finally:
            os.close(fd)
        return True
