"""A cgroup v2 per agent run, where this process may make one (as root, or in a delegated cgroup).

Every process the agent starts stays in its run's cgroup whatever it does — `setsid`, a double
fork, a cleared environment — so the run's end finds all of them by reading one file, and
`cgroup.kill` ends them in one step, forks in flight included. Nothing is read while the run
lasts: that the cgroup emptied is an event (`cgroup.events` changes; we wait on it with epoll).

The cgroup is made below this process's own one (`/proc/self/cgroup`, on the cgroup2 mount named
in `/proc/self/mountinfo`), no controller is enabled (membership is all we use), and it is removed
when the run ends. A daemon names its runs' cgroups after itself (`set_owner`): at its next start
the cgroups a killed incarnation left are emptied with `cgroup.kill` (a `setsid` escapee that
ignores SIGTERM included) and removed (`recover`); other daemons' are left alone, except empty
ones older than ABANDONED_AFTER_S, removed when a run starts. The agent
joins it before it runs anything: `launcher()` is a `sh` that writes itself into `cgroup.procs`
and then execs the agent, keeping its pid. Where no cgroup can be made
(no cgroup2, a hierarchy we may not write, not Linux, `PREDICTORX_RUN_CGROUPS=0`) `make` returns
None and descendants.py falls back to the process group, the run's tag and the subreaper.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import select
import signal
import time
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "predictorx-run-"
#: "0" turns run cgroups off (to exercise the fallback, or where the hierarchy is someone else's).
ENV_SWITCH = "PREDICTORX_RUN_CGROUPS"
#: An empty run cgroup older than this is left from a daemon that was killed: it is removed.
ABANDONED_AFTER_S = 60.0
_JOIN = 'echo 0 > "$0/cgroup.procs" || exit 125; exec "$@"'
#: How long recover() waits for a leftover cgroup to empty after cgroup.kill.
RECOVER_WAIT_S = 10.0
#: This process's runs' cgroups are named PREFIX + owner + "-" + tag (set_owner); "" before that.
_owner = ""


def set_owner(owner: str) -> None:
    """Name this process's runs' cgroups after `owner` (the daemon's id: one daemon per state dir),
    so that its next start knows which leftovers are its own (`recover`)."""
    global _owner
    _owner = "".join(c for c in owner.lower() if c.isalnum())[:16]


def recover() -> list[str]:
    """At the daemon's start: end and remove the run cgroups its killed predecessor left (named
    after the same owner). Whatever is still in one — a `setsid` escapee ignoring SIGTERM, say —
    is killed with `cgroup.kill`, its emptying awaited as an event. Sentences for the log."""
    if not _owner or not available():
        return []
    _, base = _base()  # type: ignore[misc]
    mine = f"{PREFIX}{_owner}-"
    try:
        found = sorted(p for p in base.iterdir() if p.name.startswith(mine))
    except OSError:
        return []
    said = []
    for path in found:
        group = RunCgroup(path, path.name)
        left = group.pids()
        if left:
            group.signal(signal.SIGKILL)
            if not group.wait_empty(RECOVER_WAIT_S):
                said.append(f"the run cgroup {path} a killed daemon left still holds processes {group.pids()}")
                continue
        group.remove()
        said.append(f"removed the run cgroup {path.name} a killed daemon left"
                    + (f", ending its {len(left)} process(es) {left}" if left else " (empty)"))
    return said


@functools.lru_cache(maxsize=1)
def _base() -> tuple[str, Path] | None:
    """This process's own cgroup (as /proc names it, and its directory on the cgroup2 mount), if
    we may make cgroups in it."""
    try:
        own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::"))
        mounts = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    except (OSError, StopIteration):
        return None
    for fields in mounts:
        sep = fields.index("-")
        if fields[sep + 1] != "cgroup2":
            continue
        root, point = fields[3], fields[4]
        if own != root and not own.startswith(root.rstrip("/") + "/"):
            continue  # a mount of another part of the hierarchy
        base = Path(point, own[len(root):].lstrip("/"))
        # mkdir here, and move a process out of here (the agent starts in our cgroup): both ours
        if os.access(base, os.W_OK) and os.access(base / "cgroup.procs", os.W_OK):
            return own, base
    return None


def available() -> bool:
    """Whether runs get a cgroup here."""
    return os.environ.get(ENV_SWITCH) != "0" and _base() is not None


class RunCgroup:
    def __init__(self, path: Path, name: str):
        self.path = path
        #: The cgroup as /proc/<pid>/cgroup names it (also for zombies), to tell the run's orphans.
        self.name = name

    @classmethod
    def make(cls, tag: str) -> RunCgroup | None:
        if not available():
            return None
        own, base = _base()  # type: ignore[misc]
        _remove_abandoned(base)
        name = f"{PREFIX}{_owner}-{tag}" if _owner else f"{PREFIX}{tag}"
        try:
            (base / name).mkdir()
        except OSError as exc:
            log.info("no cgroup for agent runs here (%s); ending their processes by group and tag", exc)
            return None
        return cls(base / name, "0::" + own.rstrip("/") + f"/{name}")

    def launcher(self) -> list[str]:
        """argv prefix: join the cgroup, then exec the rest (same pid, same session)."""
        return ["/bin/sh", "-c", _JOIN, str(self.path)]

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def populated(self) -> bool:
        try:
            return "populated 1" in (self.path / "cgroup.events").read_text()
        except OSError:
            return False

    def signal(self, sig: int) -> None:
        if sig == signal.SIGKILL and self._write("cgroup.kill", "1"):
            return
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def wait_empty(self, timeout: float) -> bool:
        """Block until no process is left in the cgroup (an epoll on `cgroup.events`, no polling),
        at most `timeout` seconds. Call it in a thread. True when it emptied."""
        try:
            fd = os.open(self.path / "cgroup.events", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return True  # removed: nothing in it
        deadline = time.monotonic() + timeout
        try:
            with select.epoll() as watch:
                watch.register(fd, select.EPOLLPRI)
                while True:
                    os.lseek(fd, 0, os.SEEK_SET)  # reading re-arms the change notification
                    if b"populated 1" not in os.read(fd, 4096):
                        return True
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    watch.poll(remaining)
        finally:
            os.close(fd)

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not remove the run's cgroup %s: %s", self.path, exc)

    def _write(self, name: str, value: str) -> bool:
        try:
            (self.path / name).write_text(value)
            return True
        except OSError:
            return False



def _remove_abandoned(base: Path) -> None:
    """Remove run cgroups a killed daemon left (empty ones only: rmdir refuses the others). A live
    run's cgroup is empty only for the moment before its agent joins and after its end."""
    now = time.time()
    try:
        found = [p for p in base.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return
    for path in found:
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > ABANDONED_AFTER_S:
                path.rmdir()
