"""Every process an agent started ends with its run, also those that left its process group.

Killing the agent's process group is not enough: a grandchild can `setsid` into a session of its
own, ignore SIGTERM and outlive its task (finding 13). Nothing here runs while the agent works
(an idle agent costs the daemon nothing); at the run's end the run's processes are found by:

- its cgroup, where the daemon can make one (runcgroup.py): every process the agent started is
  in it, whatever it did;
- else one pass at the end: the leader's process tree, and a tag — the run's environment carries
  `PREDICTORX_RUN_TAG=<random>`, which children inherit — looked for among the daemon's children
  (the daemon is a child subreaper, `hardening.child_subreaper`, so an abandoned process is
  re-parented to it rather than to init), or, without a subreaper (a plain program using
  `run_process`), among every process started since the run began. A process that cleared its
  environment and whose parents all exited is out of reach of this fallback, not of the cgroup.

The survivors get SIGTERM, then SIGKILL after `GRACE_S`. An orphan that exits while its run lasts
is the daemon's zombie: `reap_orphans` (on SIGCHLD, see `install_orphan_reaper`, and at each run's
end) collects those of live runs, told from the daemon's own children — git, the agents' leaders,
which others wait for — by their cgroup or their session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import threading
import time

import psutil

from .. import hardening
from .runcgroup import RunCgroup

log = logging.getLogger(__name__)

TAG_VAR = "PREDICTORX_RUN_TAG"
GRACE_S = 1.0
#: How long processes get to go once SIGKILLed (in a cgroup: until it reports itself empty).
KILL_WAIT_S = 1.5
#: Waiting for a process group to go without a cgroup (only ever at a run's end): first and
#: longest look apart.
FIRST_LOOK_S, LONGEST_LOOK_S = 0.01, 0.2

#: The runs in progress, by their leader's pid (= its session and group id), for `reap_orphans`.
_RUNS: dict[int, Descendants] = {}


def new_tag() -> str:
    return secrets.token_hex(12)


class Descendants:
    def __init__(self, leader_pid: int, tag: str, cgroup: RunCgroup | None = None):
        self.leader_pid = leader_pid
        self.tag = tag
        self.cgroup = cgroup
        self.leader_created = _create_time(leader_pid)
        self.started = (self.leader_created or time.time()) - 1.0
        self.seen: dict[int, float] = {}  # pid → create_time
        self._lock = threading.Lock()  # the end runs in a thread, and may run twice
        _RUNS[leader_pid] = self

    # -- the group, or the whole cgroup where there is one ------------------------------------
    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.leader_pid, sig)  # start_new_session: the leader's pid is the group id
        if self.cgroup is not None:
            self.cgroup.signal(sig)

    def group_alive(self) -> bool:
        """Whether a live (non-zombie) process is left in the group (in the cgroup, if any)."""
        if self.cgroup is not None:
            return self.cgroup.populated()
        return _group_alive(self.leader_pid)

    def wait_group_gone(self, timeout: float) -> bool:
        """Block until `group_alive` is false, at most `timeout` s. Call it in a thread.

        With a cgroup this waits on an event; without, it looks at growing intervals — only ever
        while a run is being stopped."""
        if self.cgroup is not None:
            return self.cgroup.wait_empty(timeout)
        deadline, pause = time.monotonic() + timeout, FIRST_LOOK_S
        while _group_alive(self.leader_pid):
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, LONGEST_LOOK_S)
        return True

    # -- the final sweep --------------------------------------------------------------------------
    def _scan(self, tree: dict[int, list[int]]) -> None:
        # Only processes that are still the ones we noted: a pid reused since is someone else's.
        roots = [pid for pid, created in [(self.leader_pid, self.leader_created), *self.seen.items()]
                 if _same(pid, created)]
        self._note(_below(roots, tree))

    def _note(self, pids: list[int]) -> None:
        for pid in pids:
            created = _create_time(pid)
            if created is not None:
                self.seen.setdefault(pid, created)

    def _tagged(self, tree: dict[int, list[int]]) -> list[int]:
        """Processes carrying this run's tag that no longer hang below the leader."""
        if hardening.is_subreaper():
            candidates = tree.get(os.getpid(), [])  # orphans came to us, not to init
        else:
            candidates = [p.pid for p in psutil.process_iter(["create_time"])
                          if (p.info["create_time"] or 0) >= self.started]
        needle = f"{TAG_VAR}={self.tag}".encode()
        found = []
        for pid in candidates:
            if pid in self.seen or pid == self.leader_pid:
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    if needle in fh.read().split(b"\0"):
                        found.append(pid)
            except OSError:
                continue
        return found

    def alive(self) -> list[psutil.Process]:
        """The run's processes still alive (not zombies), the leader excluded."""
        with self._lock:
            return self._alive()

    def _alive(self) -> list[psutil.Process]:
        if self.cgroup is not None:
            self._note(self.cgroup.pids())
        else:
            tree = _process_tree()
            self._scan(tree)
            self._note(_below(self._tagged(tree), tree))
        live = []
        for pid, created in list(self.seen.items()):
            if pid in (self.leader_pid, os.getpid()):
                continue
            try:
                proc = psutil.Process(pid)
                if _same(pid, created) and proc.status() != psutil.STATUS_ZOMBIE:
                    live.append(proc)
            except psutil.Error:
                continue
        return live

    def end(self) -> int:
        """SIGTERM every survivor, SIGKILL after `GRACE_S`, reap the ones re-parented to us; the
        run's cgroup is removed. Returns how many had to be stopped. Blocking: call it in a thread."""
        live = self.alive()
        stopped = len(live)
        for proc in live:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGTERM)
        if self.cgroup is not None:
            if stopped and not self.cgroup.wait_empty(GRACE_S):
                self.cgroup.signal(signal.SIGKILL)  # also what was forked meanwhile
                self.cgroup.wait_empty(KILL_WAIT_S)
        else:
            deadline, pause = time.monotonic() + GRACE_S, FIRST_LOOK_S
            while live and time.monotonic() < deadline:
                time.sleep(pause)
                pause = min(pause * 2, LONGEST_LOOK_S)
                live = [p for p in live if _running(p)]
            for proc in live:
                with contextlib.suppress(psutil.Error):
                    proc.send_signal(signal.SIGKILL)
        self.reap()
        return stopped

    def reap(self) -> None:
        """Collect the exit status of processes of this run that were re-parented to us; then
        the run is over for `reap_orphans`, and its cgroup goes."""
        me = os.getpid()
        deadline, pause = time.monotonic() + GRACE_S, FIRST_LOOK_S
        pending = set(self.seen)
        while pending and time.monotonic() < deadline:
            for pid in list(pending):
                try:
                    proc = psutil.Process(pid)
                    if proc.ppid() != me or abs(proc.create_time() - self.seen[pid]) >= 0.01:
                        pending.discard(pid)  # not ours to wait for (its parent will), or a reused pid
                        continue
                    done, _ = os.waitpid(pid, os.WNOHANG)
                    if done:
                        pending.discard(pid)
                except (psutil.Error, ChildProcessError):
                    pending.discard(pid)
            if pending:
                time.sleep(pause)
                pause = min(pause * 2, LONGEST_LOOK_S)
        reap_orphans()
        _RUNS.pop(self.leader_pid, None)
        if self.cgroup is not None:
            self.cgroup.remove()


def reap_orphans() -> int:
    """Collect this process's zombie children that belong to a run in progress: orphans of its
    agents re-parented to us (a subreaper) that exited. Those are in a run's cgroup or session;
    our own children (git, the agents' leaders) are in neither, and whoever started them waits
    for them. Returns how many were collected."""
    if not _RUNS:
        return 0
    cgroups = {run.cgroup.name for run in list(_RUNS.values()) if run.cgroup is not None}
    reaped = 0
    for pid in _own_children():
        if pid in _RUNS:
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            if fields[0] != b"Z":
                continue
            if int(fields[3]) not in _RUNS or int(fields[3]) == os.getsid(0):  # (a reused pid)
                with open(f"/proc/{pid}/cgroup") as fh:
                    if not cgroups.intersection(fh.read().splitlines()):
                        continue
            if os.waitpid(pid, os.WNOHANG)[0]:
                reaped += 1
        except (OSError, ValueError, IndexError):
            continue
    return reaped


def install_orphan_reaper(loop: asyncio.AbstractEventLoop) -> None:
    """Reap the runs' orphans as they exit (the daemon, a subreaper, calls this once)."""
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGCHLD, reap_orphans)


def _own_children() -> list[int]:
    """This process's children, zombies included (one small file per thread; no /proc scan)."""
    pids: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{tid}/children") as fh:
                pids += [int(p) for p in fh.read().split()]
    except OSError:
        return []
    return pids


def _group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is left in the group."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    # killpg also succeeds for zombies no one has reaped yet; those are not "left running".
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return False


def _process_tree() -> dict[int, list[int]]:
    """parent pid → its children, for every process (one read of /proc/<pid>/stat each)."""
    tree: dict[int, list[int]] = {}
    if not os.path.isdir("/proc/self"):
        for proc in psutil.process_iter(["ppid"]):
            if proc.info["ppid"] is not None:
                tree.setdefault(proc.info["ppid"], []).append(proc.pid)
        return tree
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(ppid, []).append(int(name))
    return tree


def _below(roots: list[int], tree: dict[int, list[int]]) -> list[int]:
    """`roots` and everything below them."""
    found: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += tree.get(pid, [])
    return list(found)


def _same(pid: int, created: float | None) -> bool:
    now = _create_time(pid)
    return now is not None and created is not None and abs(now - created) < 0.01


def _create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
