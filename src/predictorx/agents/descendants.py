"""Every process an agent started ends with its run, also those that left its process group.

Killing the agent's process group is not enough: a grandchild can `setsid` into a session of its
own, ignore SIGTERM and outlive its task (finding 13). Three things find such a process:

- a tag: the run's environment carries `PREDICTORX_RUN_TAG=<random>`, which children inherit;
  at the end every process of ours started since the run began is checked for it;
- the tree: while the run lasts, the leader's descendants are noted every `SCAN_INTERVAL_S`
  (pid and start time, so a reused pid is never mistaken), which also catches a process that
  cleared its environment;
- the daemon is a child subreaper (`hardening.child_subreaper`), so an abandoned process is
  re-parented to the daemon rather than to init and stays in reach (and we reap it): only the
  daemon's own children need checking for the tag. Without a subreaper (a plain program using
  `run_process`) every process started since the run began is checked.

At the end the survivors get SIGTERM, then SIGKILL after `GRACE_S`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import threading
import time

import psutil

from .. import hardening

log = logging.getLogger(__name__)

TAG_VAR = "PREDICTORX_RUN_TAG"
SCAN_INTERVAL_S = 1.0
GRACE_S = 1.0
POLL_S = 0.02


def new_tag() -> str:
    return secrets.token_hex(12)


class Descendants:
    def __init__(self, leader_pid: int, tag: str):
        self.leader_pid = leader_pid
        self.tag = tag
        self.leader_created = _create_time(leader_pid)
        self.started = (self.leader_created or time.time()) - 1.0
        self.seen: dict[int, float] = {}  # pid → create_time
        self._lock = threading.Lock()  # the periodic scan runs in a thread, as does the end

    def scan(self) -> None:
        """Note the leader's descendants now (one pass over the process table)."""
        with self._lock:
            self._scan(_process_tree())

    def _scan(self, tree: dict[int, list[int]]) -> dict[int, list[int]]:
        # Only processes that are still the ones we noted: a pid reused since is someone else's.
        roots = [pid for pid, created in [(self.leader_pid, self.leader_created), *self.seen.items()]
                 if _same(pid, created)]
        for pid in _below(roots, tree):
            created = _create_time(pid)
            if created is not None:
                self.seen.setdefault(pid, created)
        return tree

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
        tree = self._scan(_process_tree())
        for pid in _below(self._tagged(tree), tree):
            created = _create_time(pid)
            if created is not None:
                self.seen.setdefault(pid, created)
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
        """SIGTERM every survivor, SIGKILL after `GRACE_S`, reap the ones re-parented to us.
        Returns how many had to be stopped. Blocking: call it in a thread."""
        live = self.alive()
        stopped = len(live)
        for proc in live:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + GRACE_S
        while live and time.monotonic() < deadline:
            time.sleep(POLL_S)
            live = [p for p in live if _running(p)]
        for proc in live:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGKILL)
        self.reap()
        return stopped

    def reap(self) -> None:
        """Collect the exit status of processes of this run that were re-parented to us."""
        me = os.getpid()
        deadline = time.monotonic() + GRACE_S
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
                time.sleep(POLL_S)


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
