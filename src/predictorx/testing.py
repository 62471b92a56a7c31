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
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import httpx2 as httpx


class ProcessFailed(AssertionError, RuntimeError):
    """A process exited, a wait timed out, or an API call failed (an AssertionError for pytest,
    a RuntimeError for scripts)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
        self.log_path = log_path or home.parent / f"server-{self.port}.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([*wrapper, sys.executable, "-m", "predictorx", "server", "start", "--port",
                                      str(self.port), *args], env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        wait_until(self._healthy, start_timeout, 0.05, "the server to answer")
        self.config = json.loads((home / "config.json").read_text())
        self.token = self.config["token"]
        self.http = httpx.Client(base_url=self.url, headers=self.headers(), timeout=http_timeout)

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise ProcessFailed(f"server exited: {self.log_path.read_text()[-3000:]}")
        try:
            return httpx.get(f"{self.url}/api/health", timeout=1).status_code == 200
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
