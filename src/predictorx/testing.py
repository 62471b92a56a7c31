"""Real server and daemon processes, as a user starts them, for the end-to-end tests
(tests/e2e/harness.py) and the benchmarks (bench/_common.py): the one place that knows how to
start `python -m predictorx server start` / `daemon start --foreground` with a state dir of their
own, wait until they answer, and stop them (the server's whole process group; the daemon alone,
which stops its agents itself). Not used by Predictor X itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import httpx2 as httpx


class ProcessFailed(AssertionError, RuntimeError):
    """A process exited, a wait timed out, or an API call failed (an AssertionError for pytest,
    a RuntimeError for scripts)."""


#: Ports for test servers come from below the kernel's ephemeral range: a port found with bind(0)
#: and released for a server process to bind could meanwhile become the local port of any outgoing
#: connection (a database client, an HTTP request) of any process on the machine, or be handed to
#: another test process's bind(0) — with several pytest workers the server then failed to start.
#: Chosen at random (never from `random`, which a test may seed) and never twice by one process.
PORTS_FROM = 20000
_handed_out: set[int] = set()
_pick = random.SystemRandom()


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback port nothing listens on, for a server about to start (below the ephemeral range)."""
    end = _ephemeral_start()
    for _ in range(200 if end - PORTS_FROM >= 1000 else 0):
        port = _pick.randrange(PORTS_FROM, end)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket() as s:  # a machine whose ephemeral range starts low: the kernel's choice
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bound_socket() -> socket.socket:
    """A socket bound to a free loopback port, for a server in this process (uvicorn's
    `Server.run(sockets=[…])`): no one can take the port between its choice and the server's start."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    return s


def address_in_use(log: str) -> bool:
    """Whether a server's output says its port was taken (Predictor X's sentence, or uvicorn's errno 98)."""
    return re.search(r"port \d+ on \S+ is in use|address already in use", log, re.IGNORECASE) is not None


def wait_until(check: Callable[[], Any], timeout: float = 20.0, interval: float = 0.05, what: str = "condition") -> Any:
    """The first truthy value of `check()`, polled every `interval` s; ProcessFailed after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise ProcessFailed(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def stop_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group, SIGKILL it after `grace` s."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def run_group(args: Sequence[str], *, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`subprocess.run(args, capture_output=True, text=True, timeout=…)` in a process group of its own,
    and whatever of that group is left when it ends or times out is killed: subprocess.run kills only
    the process it started, so a `server start --workers 2` that timed out left its workers running.
    The output goes through files, not pipes: a child left behind holding a pipe would keep the
    reader waiting after the command itself ended."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(list(args), env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
        try:
            proc.wait(timeout)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))


class ServerProcess:
    """`python -m predictorx server start --port P [args]` with state dir `home`; `self.http` is a
    client with the owner's token (from the config.json the first start writes). `wrapper` goes
    before the command (e.g. prlimit)."""

    def __init__(self, home: Path, database_url: str, *, port: int | None = None, args: Sequence[str] = (),
                 log_path: Path | None = None, env: dict[str, str] | None = None, start_timeout: float = 60.0,
                 http_timeout: float = 60.0, wrapper: Sequence[str] = ()):
        self.home = home
        self.database_url = database_url
        self.port = port or free_port()  # a given port: the same server started again after a crash
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "PREDICTORX_HOME": str(home), "PREDICTORX_DATABASE_URL": database_url, **(env or {})}
        home.mkdir(parents=True, exist_ok=True)
        # One client for every poll: a new client per poll (`httpx.get`) builds an SSL context, 20 ms
        # of CPU, and a start under load is polled every 50 ms for seconds.
        self._probe = httpx.Client(timeout=1)
        try:
            self._start(port, args, log_path, start_timeout, wrapper)
        finally:
            self._probe.close()
        self.config = json.loads((home / "config.json").read_text())
        self.token = self.config["token"]
        self.http = httpx.Client(base_url=self.url, headers=self.headers(), timeout=http_timeout)

    def _start(self, port: int | None, args: Sequence[str], log_path: Path | None, start_timeout: float,
               wrapper: Sequence[str]) -> None:
        for attempt in range(1 if port else 3):  # a port of our choosing may be taken before the server binds it
            if attempt:
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}"
            self.log_path = log_path or self.home.parent / f"server-{self.port}.log"
            self.log = open(self.log_path, "wb")
            self.proc = self._popen([*wrapper, sys.executable, "-m", "predictorx", "server", "start", "--port",
                                     str(self.port), *args], bool(wrapper or args))
            try:
                wait_until(self._healthy, start_timeout, 0.05, "the server to answer")
                return
            except ProcessFailed as e:
                stop_group(self.proc)
                self.log.close()
                if port or attempt == 2 or not address_in_use(str(e)):
                    raise

    def _popen(self, command: list[str], customised: bool) -> subprocess.Popen:
        """The server's process, its output to `self.log`, in a session of its own. `customised`: a
        wrapper or arguments of the caller's (a test harness may start plain servers another way)."""
        return subprocess.Popen(command, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise ProcessFailed(f"server exited: {self.log_path.read_text()[-3000:]}")
        try:
            return self._probe.get(f"{self.url}/api/health").status_code == 200
        except httpx.HTTPError:
            return False

    def api(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        r = self.http.request(method, path, json=body, **kw)
        if r.status_code >= 400:
            raise ProcessFailed(f"{method} {path}: {r.status_code} {r.text[:2000]}")
        return r.json() if r.content else None

    def stop(self) -> None:
        stop_group(self.proc)
        with contextlib.suppress(Exception):
            self.http.close()
        self.log.close()


class DaemonProcess:
    """`predictorx daemon start --foreground` with its own state dir (so its own daemon_id), started
    with a copy of the server's config.json. `wrapper` goes before the command (e.g. setpriv), `args`
    after it (e.g. --sandbox); `replicas`: servers sharing one database, any of which may hold its
    push connection."""

    def __init__(self, server: ServerProcess, home: Path, *, max_tasks: int = 4, wait: bool = True,
                 wrapper: Sequence[str] = (), args: Sequence[str] = (), cwd: Path | None = None,
                 replicas: Sequence[ServerProcess] | None = None, env: dict[str, str] | None = None,
                 ready_timeout: float = 60.0):
        home.mkdir(parents=True, exist_ok=True)
        shutil.copy(server.home / "config.json", home / "config.json")
        self.home = home
        self.server = server
        self.replicas = list(replicas or [server])
        self.ready_timeout = ready_timeout
        self.env = {**server.env, "PREDICTORX_HOME": str(home), **(env or {})}
        self.env.pop("PREDICTORX_DATABASE_URL", None)
        self.log_path = home / "daemon.out"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([*wrapper, sys.executable, "-m", "predictorx", "daemon", "start", "--foreground",
                                      "--max-tasks", str(max_tasks), *args], env=self.env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd)
        self.id: str | None = None
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Until it has its id, has registered and holds its push connection."""
        idf = self.home / "daemon_id"
        self.id = wait_until(lambda: self._alive() and idf.exists() and idf.read_text().strip(), self.ready_timeout,
                             0.05, "the daemon id")

        def connected() -> bool:
            for r in self.replicas:
                answer = r.http.get(f"/api/daemons/{self.id}")  # 404 until it registered
                if answer.status_code == 200 and answer.json().get("connected"):
                    return True
            return False
        wait_until(lambda: self._alive() and connected(), self.ready_timeout, 0.05, "the daemon's push connection")

    def _alive(self) -> bool:
        if self.proc.poll() is not None:
            raise ProcessFailed(f"daemon exited: {self.log_path.read_text()[-3000:]}")
        return True

    def output(self) -> str:
        return self.log_path.read_text()

    def kill(self) -> None:
        """SIGKILL the daemon alone, as a crash would (its agents are in their own groups)."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # the daemon alone: it stops its agents itself
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()
