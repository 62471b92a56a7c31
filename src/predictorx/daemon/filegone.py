"""Wait until a file is gone, woken by the kernel rather than by looking again and again (issue 30):
a worktree task waits this way for git's `index.lock` in the person's repository (runner.py).

The file's folder is watched with inotify (privatescan.Inotify: removals, renames — git renames
`index.lock` onto `index` when it is done — and the folder's own removal), the watch is read on the
event loop, and the file is looked at again only when the folder changed. Where inotify is missing
or the folder cannot be watched, it is looked at every `FALLBACK_POLL_S`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from . import privatescan

#: Without inotify: how often the file is looked at.
FALLBACK_POLL_S = 0.5


def _watch(folder: Path) -> privatescan.Inotify | None:
    libc = privatescan.inotify_libc()
    if libc is None:
        return None
    try:
        watch = privatescan.Inotify(libc)
    except OSError:
        return None
    try:
        watch.watch(str(folder))
    except OSError:
        watch.close()
        return None
    return watch


async def until_gone(path: Path, timeout: float) -> bool:
    """True once `path` does not exist; False if it still does after `timeout` seconds."""
    if not path.exists():
        return True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    watch = _watch(path.parent)
    if watch is None:
        while path.exists():
            left = deadline - loop.time()
            if left <= 0:
                return False
            await asyncio.sleep(min(FALLBACK_POLL_S, left))
        return True
    changed = asyncio.Event()

    def readable() -> None:
        watch.changed()  # (drains what is waiting)
        changed.set()
    loop.add_reader(watch.fd, readable)
    try:
        # Looked at after the watch is in place: a removal before it is seen here, one after wakes us.
        while path.exists():
            left = deadline - loop.time()
            if left <= 0:
                return False
            changed.clear()
            try:
                await asyncio.wait_for(changed.wait(), left)
            except TimeoutError:
                pass
        return True
    finally:
        loop.remove_reader(watch.fd)
        watch.close()
