"""Can people looking at a heavy issue page stall the server? (issue 29 §5)

An issue carries twenty comments of ~100 KB Markdown tables (each within the API's limit; this
once made one view take 47 s and 11 MB while `/api/health` waited 43 s). A registered daemon runs
a task and heartbeats every 0.5 s while several clients view that page in a loop for a while; a
prober asks `/api/health` every 0.1 s. Prints one JSON object: health and heartbeat latencies
(p50/p99/max), the page views' latencies and sizes, and whether the task survived.

    .venv/bin/python bench/pagestall.py [--clients 6] [--seconds 20] [--postgres-workers 2]

SQLite with one server process, and PostgreSQL with `--workers 2` when it answers
(PREDICTORX_BENCH_POSTGRES_URL / PREDICTORX_TEST_POSTGRES_URL / the local default).
tests/e2e/test_page_stall.py runs the same scenario, smaller, and asserts on it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx

from predictorx.testing import ServerProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    Server, backends, database, emit, log, machine, redact, summary_ms, tempdir)

COMMENTS = 20
TABLE_CHARS = 99_000  # under the API's 100,000-character comment limit
HEARTBEAT_EVERY = 0.5
HEALTH_EVERY = 0.1
#: What the server under test is started with: a short timeout and a quick sweeper, so a stall
#: of a few seconds is a failed task here rather than after the default 30 s.
DAEMON_TIMEOUT_S = 10
SERVER_ENV = {"PREDICTORX_DAEMON_TIMEOUT": str(DAEMON_TIMEOUT_S), "PREDICTORX_SWEEP_INTERVAL": "1"}


def markdown_table(chars: int = TABLE_CHARS) -> str:
    head = "| " + " | ".join(f"column {i}" for i in range(10)) + " |\n|" + "---|" * 10 + "\n"
    row = "| " + " | ".join(f"value {i}" for i in range(10)) + " |\n"
    return head + row * ((chars - len(head)) // len(row))


@dataclass
class Seeded:
    issue: int
    task_id: str
    daemon_token: str


def seed(server: Any, comments: int = COMMENTS) -> Seeded:
    """An issue with `comments` huge tables, and a task of it running on a registered daemon."""
    did = str(uuid.uuid4())
    reg = server.api("POST", "/api/daemon/register", {"daemon_id": did, "name": "stall-probe",
                                                       "runtimes": [{"provider": "command", "version": "1"}]})
    daemon = {"Authorization": f"Bearer {reg['token']}"}
    server.api("POST", "/api/agents", {"name": "worker", "provider": "command", "command": ["true"]})
    issue = server.api("POST", "/api/issues", {"title": "Tables", "assignee": "worker"})
    claimed = server.api("POST", "/api/daemon/claim", {"limit": 1}, headers=daemon)["tasks"]
    task_id = claimed[0]["task"]["id"]
    server.api("POST", f"/api/daemon/tasks/{task_id}/status", {"status": "running"}, headers=daemon)
    table = markdown_table()
    for _ in range(comments):
        server.api("POST", f"/api/issues/{issue['number']}/comments", {"body": table})
    return Seeded(issue["number"], task_id, reg["token"])


@dataclass
class Probe:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)


def _loop(url: str, stop: threading.Event, every: float, request, probe: Probe, timeout: float) -> None:
    with httpx.Client(base_url=url, timeout=timeout) as client:
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                r = request(client)
                if r.status_code >= 400:
                    probe.errors.append(f"{r.status_code} {r.text[:200]}")
                probe.sizes.append(len(r.content))
            except httpx.HTTPError as e:
                probe.errors.append(f"{type(e).__name__}: {e}")
            probe.latencies.append(time.monotonic() - t0)
            stop.wait(max(0.0, every - (time.monotonic() - t0)))


def view_loop(url: str, page: str, token: str, clients: int, seconds: float) -> dict[str, Any]:
    """`clients` threads viewing `page` for `seconds` (each stops after its view in flight)."""
    done = threading.Event()
    probes = [Probe() for _ in range(clients)]
    owner = {"Authorization": f"Bearer {token}"}
    threads = [threading.Thread(target=_loop, args=(url, done, 0.0, lambda c: c.get(page, headers=owner), p, 300.0))
               for p in probes]
    for t in threads:
        t.start()
    done.wait(seconds)
    done.set()
    for t in threads:
        t.join(600)
    return {"latencies": [x for p in probes for x in p.latencies], "errors": [e for p in probes for e in p.errors],
            "sizes": [n for p in probes for n in p.sizes]}


def hammer(server: Any, seeded: Seeded, *, clients: int = 6, seconds: float = 20.0) -> dict[str, Any]:
    """`clients` page viewers (in a process of their own, so their work does not slow the probes
    down) for `seconds`, with the daemon's heartbeats and a health prober running meanwhile."""
    stop = threading.Event()
    health, beats = Probe(), Probe()
    daemon = {"Authorization": f"Bearer {seeded.daemon_token}"}
    threads = [
        threading.Thread(target=_loop, args=(server.url, stop, HEALTH_EVERY, lambda c: c.get("/api/health"),
                                             health, 120.0)),
        threading.Thread(target=_loop, args=(server.url, stop, HEARTBEAT_EVERY, lambda c: c.post(
            "/api/daemon/heartbeat", json={"task_ids": [seeded.task_id]}, headers=daemon), beats, 120.0)),
    ]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    viewers = subprocess.run([sys.executable, __file__, "--view", server.url, f"/issues/{seeded.issue}",
                              "--clients", str(clients), "--seconds", str(seconds)],
                             input=server.token, capture_output=True, text=True, timeout=seconds + 900)
    elapsed = time.monotonic() - t0
    stop.set()
    for t in threads:
        t.join(130)
    if viewers.returncode != 0:
        raise RuntimeError(f"the page viewers failed: {viewers.stderr[-2000:]}")
    views = Probe(**json.loads(viewers.stdout))
    task = server.api("GET", f"/api/tasks/{seeded.task_id}")
    return {"health": {**summary_ms(health.latencies), "errors": health.errors[:5]},
            "heartbeat": {**summary_ms(beats.latencies), "errors": beats.errors[:5]},
            "page_views": {**summary_ms(views.latencies), "errors": views.errors[:5],
                           "max_bytes": max(views.sizes, default=0), "clients": clients},
            "hammer_seconds": round(elapsed, 1), "task_status": task["status"],
            "task_failure": task.get("failure_reason")}


def _run(name: str, base: str | None, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    with database(name, base, root) as url:
        workers = args.postgres_workers if name == "postgres" else 1
        server = Server(root, url, **SERVER_ENV) if workers == 1 else _workers(root, url, workers)
        try:
            log(f"{name}: seeding {COMMENTS} comments of {TABLE_CHARS // 1000} KB tables")
            seeded = seed(server)
            log(f"{name}: {args.clients} viewers for {args.seconds} s")
            result = hammer(server, seeded, clients=args.clients, seconds=args.seconds)
            return {"database": redact(url), "server_workers": workers, **result}
        finally:
            server.stop()


def _workers(root: Path, url: str, workers: int) -> ServerProcess:
    return ServerProcess(root / "server-home", url, args=("--workers", str(workers)), env={
        "PREDICTORX_WORKSPACES_ROOT": str(root / "workspaces"), **SERVER_ENV})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--postgres-workers", type=int, default=2)
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--view", nargs=2, metavar=("URL", "PAGE"), help="(internal) be the page viewers; "
                        "the token comes on stdin")
    args = parser.parse_args()
    if args.view:
        print(json.dumps(view_loop(*args.view, sys.stdin.read().strip(), args.clients, args.seconds)))
        return
    out: dict[str, Any] = {"bench": "pagestall", "machine": machine(), "comments": COMMENTS,
                           "comment_chars": TABLE_CHARS, "daemon_timeout_s": DAEMON_TIMEOUT_S, "runs": {}}
    for name, base in backends(include_postgres=not args.sqlite_only):
        with tempdir(f"px-pagestall-{name}-") as root:
            out["runs"][name] = _run(name, base, root, args)
    out["loadavg_after"] = machine()["loadavg_1_5_15"]
    emit(out)


if __name__ == "__main__":
    main()
