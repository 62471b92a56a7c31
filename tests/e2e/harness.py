"""Real processes for end-to-end tests: a server, daemons, the CLI — as a user would run them.
They start and stop through predictorx.testing, the harness the benchmarks use too."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from predictorx.testing import DaemonProcess, ServerProcess, free_port, run_group, wait_until  # noqa: F401  (re-exported)

from .forkserver import fork_server

FAKES = Path(__file__).resolve().parents[1] / "fakes"


class Server(ServerProcess):
    """A server for a test: a quick sweep and a daemon timeout a loaded machine stays within (30 s:
    with 3 s, busy daemons at load 17 went past it and the sweeper failed their tasks); a test
    about a dead daemon's sweep sets a short one (`env`, or the `server_env` marker)."""

    def __init__(self, home: Path, database_url: str, *, args: tuple[str, ...] = (), port: int | None = None,
                 **env: str):
        # A start waits until the server answers; parallel workers on a loaded 2-core machine have
        # taken over 30 s to import and start it (the bound costs nothing when it is quick).
        super().__init__(home, database_url, port=port, args=args, start_timeout=90, http_timeout=30,
                         env={"PREDICTORX_DAEMON_TIMEOUT": "30", "PREDICTORX_SWEEP_INTERVAL": "0.5", **env})

    def _popen(self, command: list[str], customised: bool):
        """A plain server is forked from the zygote, which imported the server already (forkserver.py);
        one with a wrapper or arguments of its own (workers, a different host) starts as before."""
        forked = None if customised else fork_server(command, self.env, self.log_path)
        return forked or super()._popen(command, customised)

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

    def wait_task(self, task_id: str, statuses=("completed", "failed", "cancelled"), timeout: float = 30) -> dict:
        return wait_until(lambda: (t := self.api("GET", f"/api/tasks/{task_id}"))["status"] in statuses and t,
                          timeout, 0.05, f"task {task_id} to reach {statuses}")


class Daemon(DaemonProcess):
    """A daemon for a test: the fake agent CLIs first on PATH, quick heartbeats and polls."""

    def __init__(self, server: Server, home: Path, *, max_tasks: int = 4, replicas: list[Server] | None = None,
                 wrapper: tuple[str, ...] = (), args: tuple[str, ...] = (), cwd: Path | None = None,
                 **env: str):
        super().__init__(server, home, max_tasks=max_tasks, wrapper=wrapper, args=args, cwd=cwd, replicas=replicas,
                         ready_timeout=30, env={"PATH": f"{FAKES}{os.pathsep}{os.environ.get('PATH', '')}",
                                                "PREDICTORX_HEARTBEAT_INTERVAL": "0.5", "PREDICTORX_POLL_INTERVAL": "1",
                                                "PREDICTORX_LOG_LEVEL": "INFO", **env})


#: Added to an agent that reports through files outside its workdir (a fake CLI's record, an order
#: log in the test's folder): the sandbox, on by default (issue 29), forbids exactly that. What runs
#: sandboxed is tested in test_sandbox*.py and tests/realcli; these tests are about something else.
UNCONFINED = {"sandbox": False}


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
