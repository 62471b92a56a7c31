"""Wait until the store changes, without looking at it in a loop.

The wake hook (``Stop --wake``) keeps an idle chat's process waiting for a message, up to an
hour. It used to ask the store every second (two queries and a wake-up each time): an idle chat
kept a process that never slept. Every message, session change or lease is a write to
the store, and a write to a SQLite store in WAL mode modifies its files; on Linux the waiting
process sleeps on inotify for a change in the store's folder and asks again only then (or after
its longest wait, for what becomes due with time alone). Elsewhere, or when inotify cannot be
used, it sleeps the interval as before.
"""

from __future__ import annotations

import os
import select
import struct
import sys
import time

# linux/inotify.h: what a write to the store (its -wal, -shm or main file) or a file replaced shows as
_IN_MODIFY, _IN_CLOSE_WRITE, _IN_MOVED_TO, _IN_CREATE = 0x2, 0x8, 0x80, 0x100
_IN_NONBLOCK_CLOEXEC = 0o4000 | 0o2000000
_EVENT = struct.Struct("iIII")


class StoreWatch:
    """``wait(timeout)`` returns when a file of the store's folder changed, or after ``timeout``."""

    def __init__(self, db_path: str | None) -> None:
        self.fd: int | None = None
        if not db_path or not sys.platform.startswith("linux"):
            return
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(_IN_NONBLOCK_CLOEXEC)
            if fd < 0:
                return
            folder = os.path.dirname(os.path.abspath(db_path)).encode()
            if libc.inotify_add_watch(fd, folder, _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_TO | _IN_CREATE) < 0:
                os.close(fd)
                return
            self.fd = fd
        except (OSError, AttributeError):
            self.fd = None

    @property
    def watching(self) -> bool:
        return self.fd is not None

    def wait(self, timeout: float) -> bool:
        """Sleep until the store's folder changes (True) or `timeout` passes (False)."""
        if self.fd is None:
            time.sleep(max(0.0, timeout))
            return False
        ready, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not ready:
            return False
        try:
            while os.read(self.fd, 64 * _EVENT.size):  # drain: one look answers them all
                pass
        except BlockingIOError:
            pass
        return True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
