"""Shared helpers for the bench scripts: real server and daemon processes, databases, statistics.

Each bench prints ONE JSON object on stdout; everything else (progress, child logs on failure)
goes to stderr. Processes are started through predictorx.testing, the harness tests/e2e uses too —
`python -m predictorx …` with a temporary PREDICTORX_HOME — and are always stopped (and temp dirs
removed) on exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from predictorx.testing import DaemonProcess, ServerProcess, free_port, stop_group, wait_until  # noqa: F401

PYTHON = sys.executable


def _isolated_from_the_person() -> None:
    """A bench, like a test, never reads or writes the person's own state: the per-user dirs that
    processes it starts would otherwise fall back to (the in-place lock dir under ~/.cache, the
    agents-room store, XDG data and state) point into one temp dir, removed at exit. A variable
    the caller set is kept."""
    import atexit

    root = Path(tempfile.mkdtemp(prefix="px-bench-user-"))
    atexit.register(shutil.rmtree, root, True)
    for var, sub in (("XDG_CACHE_HOME", "cache"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
                     ("XDG_CONFIG_HOME", "config"), ("PREDICTORX_LOCK_DIR", "locks"),
                     ("AGENTS_ROOM_DB", "agents-room/room.db")):
        if not os.environ.get(var):
            path = root / sub
            (path.parent if var == "AGENTS_ROOM_DB" else path).mkdir(parents=True, exist_ok=True, mode=0o700)
            os.environ[var] = str(path)


_isolated_from_the_person()
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
_T0 = time.monotonic()


def log(*parts: Any) -> None:
    print(f"[{time.monotonic() - _T0:7.1f}s]", *parts, file=sys.stderr, flush=True)


def emit(result: dict[str, Any]) -> None:
    """The one JSON object a bench prints."""
    print(json.dumps(result, indent=2, sort_keys=False), flush=True)


def machine() -> dict[str, Any]:
    """Also the load average: other work on a shared machine skews every figure; and the CPU time
    one fixed piece of Python takes here, since CPU-per-request figures move with the machine."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
            "python_reference_cpu_ms": python_reference_cpu_ms()}


def python_reference_cpu_ms() -> float:
    """CPU milliseconds of a fixed interpreter workload (a loop, dicts, JSON round trips), the
    best of five: the same code measures ~1.7× more CPU per request on a machine where this is
    ~1.7× higher, so per-request CPU figures of two machines compare only beside this one."""
    import json
    import time

    doc = {"id": "x" * 36, "status": "queued", "attempt": 1, "tags": list(range(20)), "nested": {"a": [1.5] * 10}}
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        total = 0
        for i in range(200_000):
            total += i % 7
        for _ in range(2_000):
            total += len(json.loads(json.dumps(doc)))
        best = min(best, time.process_time() - t0)
    return round(best * 1000, 1)


# -- statistics ---------------------------------------------------------------------------------

def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted list."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(round(q / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def summary_ms(seconds: list[float]) -> dict[str, Any]:
    """count, p50/p90/p99/max/mean in milliseconds, from latencies in seconds."""
    v = sorted(x * 1000 for x in seconds)
    if not v:
        return {"count": 0}
    return {"count": len(v), "p50_ms": round(percentile(v, 50), 2), "p90_ms": round(percentile(v, 90), 2),
            "p99_ms": round(percentile(v, 99), 2), "max_ms": round(v[-1], 2),
            "mean_ms": round(statistics.fmean(v), 2), "min_ms": round(v[0], 2)}


# -- processes ----------------------------------------------------------------------------------

class Server(ServerProcess):
    """A server for a bench: state dir `root/server-home`, workspaces under `root`."""

    def __init__(self, root: Path, database_url: str, **env: str):
        # Every simulated client shares one loopback address: no per-address connection cap.
        super().__init__(root / "server-home", database_url, env={
            "PREDICTORX_WORKSPACES_ROOT": str(root / "workspaces"), "PREDICTORX_MAX_CONNECTIONS_PER_CLIENT": "0",
            **env})

    def cpu_seconds(self) -> float:
        """CPU time (user + system, all threads) the server process has used so far."""
        import psutil

        t = psutil.Process(self.proc.pid).cpu_times()
        return t.user + t.system


class EventWatch(threading.Thread):
    """Holds a server's event stream (as a page does) and records when each task's first event that
    `wanted` accepts arrived: `seen[task_id]` (time.time()); `ready` is set once the stream says hello."""

    def __init__(self, server: Server, wanted: Callable[[dict[str, Any]], bool]):
        super().__init__(daemon=True)
        self.server, self.wanted = server, wanted
        self.seen: dict[str, float] = {}
        self.ready = threading.Event()

    def run(self) -> None:
        import httpx2 as httpx

        try:
            with httpx.stream("GET", f"{self.server.url}/api/events", headers=self.server.headers(),
                              timeout=httpx.Timeout(30, read=None)) as r:
                for line in r.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    event = json.loads(line[5:])
                    if event.get("type") == "hello":
                        self.ready.set()
                    elif event.get("task_id") and self.wanted(event):
                        self.seen.setdefault(event["task_id"], time.time())
        except httpx.HTTPError:
            pass  # the server stopped at the end of the bench


class Daemon(DaemonProcess):
    """A daemon for a bench: quiet (warnings only)."""

    def __init__(self, server: Server, home: Path, *, max_tasks: int = 4, wait: bool = True, **env: str):
        super().__init__(server, home, max_tasks=max_tasks, wait=wait,
                         env={"PREDICTORX_LOG_LEVEL": "WARNING", **env})


def postgres_cpu_seconds() -> float:
    """CPU time used so far by the local PostgreSQL processes (0 when none are visible)."""
    import psutil

    total = 0.0
    for p in psutil.process_iter(["name", "cpu_times"]):
        name = p.info.get("name") or ""
        if name.startswith("postgres") and p.info.get("cpu_times"):
            total += p.info["cpu_times"].user + p.info["cpu_times"].system
    return total


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent not idle (all cores), for saturation figures."""
    import psutil

    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


@contextlib.contextmanager
def tempdir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- databases ----------------------------------------------------------------------------------

def sqlite_url(root: Path) -> str:
    return f"sqlite:///{root / 'px.db'}"


def postgres_base_url() -> str | None:
    """PREDICTORX_BENCH_POSTGRES_URL, else PREDICTORX_TEST_POSTGRES_URL, else the local default if it answers."""
    for var in ("PREDICTORX_BENCH_POSTGRES_URL", "PREDICTORX_TEST_POSTGRES_URL"):
        if os.environ.get(var):  # the server takes SQLAlchemy's spelling too; libpq does not
            return os.environ[var].replace("postgresql+psycopg://", "postgresql://", 1)
    import psycopg

    try:
        with psycopg.connect(DEFAULT_POSTGRES, connect_timeout=3):
            return DEFAULT_POSTGRES
    except Exception:  # noqa: BLE001 — not reachable: the bench reports it skipped PostgreSQL
        return None


@contextlib.contextmanager
def postgres_schema(base: str) -> Iterator[str]:
    """A fresh schema (like tests/conftest.py), dropped afterwards. Yields the URL that selects it."""
    import psycopg

    schema = f"pxbench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(base, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def backends(include_postgres: bool = True) -> list[tuple[str, str | None]]:
    """[(name, base url or None)] — sqlite always; postgres when reachable."""
    out: list[tuple[str, str | None]] = [("sqlite", None)]
    if include_postgres:
        base = postgres_base_url()
        if base:
            out.append(("postgres", base))
        else:
            log("PostgreSQL not reachable: skipping it")
    return out


@contextlib.contextmanager
def database(name: str, base: str | None, root: Path) -> Iterator[str]:
    if name == "sqlite":
        yield sqlite_url(root)
    else:
        assert base is not None
        with postgres_schema(base) as url:
            yield url


def redact(url: str) -> str:
    """The database URL without a password, for the report."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        return f"{scheme}://{cred.split(':', 1)[0]}@{host}"
    return url
