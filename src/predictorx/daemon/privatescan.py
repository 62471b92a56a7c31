"""What the machine keeps from its other users in the system dirs, scanned once and kept until
inotify says something there changed (issue 30).

Every sandboxed run hides the files of `/etc` other users may not read and the folders they may
not enter (sandbox.kept_from_others). Scanning `/etc` is an lstat per entry — ~1,300 entries, 4–6 ms
of the daemon's CPU per task, the largest part of its sandbox set-up — and the answer changes only
when someone creates, removes, renames or chmods something there. So the scan's folders are
watched (inotify: IN_ATTRIB, IN_CREATE, IN_DELETE, IN_MOVED_*, on each folder the scan entered,
added before the folder is read, so nothing changed during the scan is missed) and the next call
scans again as soon as any event (or a queue overflow) is waiting. Where inotify is missing or a
watch cannot be added (the user's watch limit), every call scans, as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat
import threading
from collections.abc import Callable, Iterable

IN_ATTRIB, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x4, 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_DONT_FOLLOW, IN_ONLYDIR = 0x400, 0x800, 0x02000000, 0x01000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
#: Whatever can change a mode bit or which entries there are.
WATCHED = IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF


def scan(roots: Iterable[str], entered: Callable[[str], None] | None = None) -> list[str]:
    """Files in `roots` other users may not read and folders they may not enter; `entered(folder)`
    is called before each folder is read."""
    found: list[str] = []
    todo = list(roots)
    while todo:  # one lstat per entry through scandir (os.walk and a path join per entry cost twice as much)
        folder = todo.pop()
        if entered is not None:
            entered(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if not mode & stat.S_IXOTH:
                    found.append(entry.path)
                else:
                    todo.append(entry.path)
            elif stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                found.append(entry.path)
    return found


class Inotify:
    """An inotify instance (non-blocking); `changed()` says whether any event is waiting."""

    def __init__(self, libc: ctypes.CDLL) -> None:
        self.libc = libc
        self.fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")

    def watch(self, folder: str) -> None:
        if self.libc.inotify_add_watch(self.fd, os.fsencode(folder), WATCHED | IN_DONT_FOLLOW | IN_ONLYDIR) < 0:
            err = ctypes.get_errno()
            # Gone or not a folder: nothing to see there. Not readable by us (EACCES, a daemon that
            # is not root): the scan cannot list it either, so nothing inside changes its answer;
            # the folder's own mode is reported by its parent's watch (IN_ATTRIB).
            if err in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EACCES):
                return
            raise OSError(err, f"inotify_add_watch {folder}")

    def changed(self) -> bool:
        try:
            return bool(os.read(self.fd, 65536))
        except BlockingIOError:
            return False

    def close(self) -> None:
        os.close(self.fd)


def inotify_libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.inotify_init1, libc.inotify_add_watch  # noqa: B018 — present, or AttributeError
        return libc
    except (OSError, AttributeError):
        return None


class PrivateScan:
    """`scan(roots)`, kept while inotify reports nothing under roots. Thread-safe."""

    def __init__(self, roots: Iterable[str]) -> None:
        self.roots = tuple(roots)
        self.scans = 0  # (how many times it read the folders: tests, and the docs' figures)
        self._lock = threading.Lock()
        self._found: list[str] | None = None
        self._watch: Inotify | None = None
        self._libc = inotify_libc()

    def __call__(self) -> list[str]:
        with self._lock:
            if self._found is None or self._watch is None or self._watch.changed():
                self._rescan()
            assert self._found is not None
            return list(self._found)

    def _rescan(self) -> None:
        self.close()
        watch: Inotify | None = None
        if self._libc is not None:
            try:
                watch = Inotify(self._libc)
            except OSError:
                watch = None
        failed: list[bool] = []

        def entered(folder: str) -> None:
            if watch is not None and not failed:
                try:
                    watch.watch(folder)
                except OSError:
                    failed.append(True)

        self.scans += 1
        self._found = scan(self.roots, entered)
        if watch is not None and failed:
            watch.close()  # (not every folder watched: scan again next time)
            watch = None
        self._watch = watch

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None
