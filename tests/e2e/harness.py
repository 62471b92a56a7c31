"""Real processes for end-to-end tests: a server, daemons, the CLI — as a user would run them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx

FAKES = Path(__file__).resolve().parents[1] / "fakes"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout: float = 20.0, interval: float = 0.05, what: str = "condition"):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Server:
    def __init__(self, home: Path, database_url: str, *, args: tuple[str, ...] = (), port: int | None = None,
                 **env: str):
        self.home = home
        self.port = port or free_port()  # a port: the same server started again after a crash
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "PREDICTORX_HOME": str(home), "PREDICTORX_DATABASE_URL": database_url,
                    "PREDICTORX_DAEMON_TIMEOUT": "3", "PREDICTORX_SWEEP_INTERVAL": "0.5", **env}
        self.log = open(home.parent / f"server-{self.port}.log", "wb")  # noqa: SIM115
        home.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-m", "predictorx", "server", "start", "--port", str(self.port), *args],
                                     env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(self._healthy, 30, what="the server to answer")
        self.config = json.loads((home / "config.json").read_text())
        self.token = self.config["token"]
        self.http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30)

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"server exited: {(self.home.parent / f'server-{self.port}.log').read_text()[-3000:]}")
        try:
            return httpx.get(f"{self.url}/api/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def api(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        r = self.http.request(method, path, json=body, **kw)
        assert r.status_code < 400, f"{method} {path}: {r.status_code} {r.text}"
        return r.json() if r.content else None

    def cli_env(self, **extra: str) -> dict[str, str]:
        return {**self.env, **extra}

    def cli(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        p = subprocess.run([sys.executable, "-m", "predictorx", *args], env=env or self.env, capture_output=True,
                           text=True, timeout=60)
        if check:
            assert p.returncode == 0, f"predictorx {' '.join(args)} failed: {p.stderr}"
        return p

    def runs(self, issue: int | str) -> list[dict]:
        return self.api("GET", f"/api/issues/{issue}/runs")

    def wait_task(self, task_id: str, statuses=("completed", "failed", "cancelled"), timeout: float = 30) -> dict:  # noqa: ANN001
        return wait_until(lambda: (t := self.api("GET", f"/api/tasks/{task_id}"))["status"] in statuses and t,
                          timeout, 0.05, f"task {task_id} to reach {statuses}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.http.close()
        self.log.close()


class Daemon:
    """A `predictorx daemon start --foreground` with its own state dir (so its own daemon_id)."""

    def __init__(self, server: Server, home: Path, *, max_tasks: int = 4, replicas: list[Server] | None = None,
                 wrapper: tuple[str, ...] = (), args: tuple[str, ...] = (), cwd: Path | None = None,
                 **env: str):
        """`replicas`: servers sharing one database; the push connection may be held by any of them.
        `wrapper` goes before the command (e.g. setpriv), `args` after it (e.g. --sandbox); `cwd`
        is where it is started from."""
        home.mkdir(parents=True, exist_ok=True)
        shutil.copy(server.home / "config.json", home / "config.json")
        self.home = home
        self.env = {**server.env, "PREDICTORX_HOME": str(home),
                    "PATH": f"{FAKES}{os.pathsep}{os.environ.get('PATH', '')}",
                    "PREDICTORX_HEARTBEAT_INTERVAL": "0.5", "PREDICTORX_POLL_INTERVAL": "1",
                    "PREDICTORX_LOG_LEVEL": "INFO", **env}
        self.env.pop("PREDICTORX_DATABASE_URL", None)
        self.log_path = home / "daemon.out"
        self.log = open(self.log_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen([*wrapper, sys.executable, "-m", "predictorx", "daemon", "start", "--foreground",
                                      "--max-tasks", str(max_tasks), *args], env=self.env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd)
        self.id = wait_until(lambda: (home / "daemon_id").exists() and (home / "daemon_id").read_text().strip(),
                             20, what="the daemon id")
        wait_until(lambda: any(d["id"] == self.id and d["online"] for d in server.api("GET", "/api/daemons"))
                   or self._check_alive(), 30, what="the daemon to register")
        wait_until(lambda: any(r.api("GET", f"/api/daemons/{self.id}")["connected"] for r in replicas or [server])
                   or self._check_alive(), 30, what="the daemon's push connection")

    def _check_alive(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"daemon exited: {self.log_path.read_text()[-3000:]}")
        return False

    def output(self) -> str:
        return self.log_path.read_text()

    def kill(self) -> None:
        """SIGKILL the daemon alone, as a crash would (its agents are in their own groups)."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=30).stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {"README.md": "# sample\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", ".")
    git(path, "-c", "commit.gpgSign=false", "commit", "-q", "-m", "initial")
    return path


def listening_addresses(pid: int) -> list[tuple[str, int]]:
    """Every (ip, port) a process and its children listen on (TCP)."""
    import psutil

    root = psutil.Process(pid)
    out = []
    for p in (root, *root.children(recursive=True)):
        try:
            conns = p.net_connections(kind="tcp")
        except psutil.NoSuchProcess:
            continue
        out += [(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]
    return out


def non_loopback_addresses() -> list[str]:
    """This machine's IPv4 addresses other than loopback (a LAN would reach these)."""
    import ipaddress

    import psutil

    return [a.address for addrs in psutil.net_if_addrs().values() for a in addrs
            if a.family == socket.AF_INET and not ipaddress.ip_address(a.address).is_loopback]
