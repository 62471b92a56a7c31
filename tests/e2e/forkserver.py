"""Servers forked from a zygote (zygote.py) instead of started from scratch: the end-to-end tests'
~120 server starts each spent ~1.2 CPU-s importing what the zygote imports once per test process.

`fork_server(command, env, log_path)` returns a `ForkedProcess`, which answers what the harness and
the tests ask of a `subprocess.Popen` (pid, poll, wait, send_signal, terminate, kill, returncode);
the process is the zygote's child, so the zygote reports its end. A zygote that died is started
again; with PREDICTORX_TEST_FORK_SERVERS=0 `fork_server` returns None and the caller starts the
server as before."""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ZYGOTE = Path(__file__).with_name("zygote.py")
#: A zygote's imports on a loaded 2-core machine (a server start has taken 30 s there).
READY_TIMEOUT_S = 90


class ForkedProcess:
    """The part of subprocess.Popen the harness uses, for a process the zygote forked."""

    def __init__(self, zygote: "Zygote", pid: int, args: list[str]):
        self._zygote = zygote
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._zygote.changed:
            while self.poll() is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(self.args, timeout)
                self._zygote.changed.wait(left if left is not None else 1.0)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(ZYGOTE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     start_new_session=True)
        self.changed = threading.Condition()
        self._exits: dict[int, int] = {}
        self._pids: list[int] = []
        self._lock = threading.Lock()
        self.alive = True
        ready = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(ready,), name="zygote-reader", daemon=True)
        self._reader.start()
        if not ready.wait(READY_TIMEOUT_S):
            self.close()
            raise RuntimeError("the server zygote did not get ready")

    def _read(self, ready: threading.Event) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            word, *rest = raw.decode().split()
            with self.changed:
                if word == "ready":
                    ready.set()
                elif word == "pid":  # a pid the kernel gave again: the earlier process's end is not this one's
                    self._exits.pop(int(rest[0]), None)
                    self._pids.append(int(rest[0]))
                elif word == "exit":
                    self._exits[int(rest[0])] = int(rest[1])
                self.changed.notify_all()
        with self.changed:
            self.alive = False
            self.changed.notify_all()

    def exit_code(self, pid: int) -> int | None:
        with self.changed:
            if pid in self._exits:
                return self._exits[pid]
            if not self.alive:  # the zygote is gone and reaps no more: the process is gone with it or orphaned
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return -signal.SIGKILL
            return None

    def fork(self, command: list[str], env: dict[str, str], log_path: Path) -> ForkedProcess:
        with self._lock, self.changed:
            assert self.proc.stdin is not None
            known = len(self._pids)
            self.proc.stdin.write((json.dumps({"argv": command, "env": env, "log": str(log_path)}) + "\n").encode())
            self.proc.stdin.flush()
            deadline = time.monotonic() + 30
            while len(self._pids) == known:
                if not self.alive or time.monotonic() > deadline:
                    raise RuntimeError("the server zygote did not fork")
                self.changed.wait(1.0)
            return ForkedProcess(self, self._pids[known], command)

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(10)


_ZYGOTE: list[Zygote] = []
_START = threading.Lock()


def _zygote() -> Zygote | None:
    if os.environ.get("PREDICTORX_TEST_FORK_SERVERS", "1") == "0":
        return None
    with _START:
        if _ZYGOTE and not _ZYGOTE[0].alive:
            _ZYGOTE.pop().close()
        if not _ZYGOTE:
            _ZYGOTE.append(Zygote())
            atexit.register(_ZYGOTE[0].close)
        return _ZYGOTE[0]


def fork_server(command: list[str], env: dict[str, str], log_path: Path) -> ForkedProcess | None:
    """`command` is `[python, -m, predictorx, server, start, …]`: its arguments from `server` on run
    in a fork of the zygote, with `env` and the output appended to `log_path`."""
    zygote = _zygote()
    if zygote is None:
        return None
    return zygote.fork(command[3:], env, log_path)
