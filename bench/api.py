"""API throughput and latency against a real server process, on SQLite and PostgreSQL (issue 2).

1. create 1,000 projects with 3 resources each (POST /api/projects with `resources`);
2. list a project's resources (GET /api/projects/{id}/resources) many times, projects chosen at
   random, from a few concurrent clients.

Client: httpx2.AsyncClient (HTTP/1.1 keep-alive, one connection per worker) with WORKERS coroutines
in one process, each sending its next request as soon as the previous answer arrived (closed loop).
The client shares the 2 cores with the server; its own CPU time is reported.

Usage: .venv/bin/python bench/api.py [--projects 1000] [--list-seconds 10] [--workers 4] [--sqlite-only]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
import uuid
from pathlib import Path

import httpx2 as httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Server, backends, database, emit, log, machine, redact, summary_ms, tempdir

TARGET_LIST_RPS = 500
TARGET_LIST_P99_MS = 20.0


def project_body(i: int, daemon_id: str) -> dict:
    """`daemon_id`: a daemon registered by the owner (a folder must name one of the caller's own)."""
    return {"title": f"Bench project {i}", "description": "A project made by bench/api.py.", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": f"https://github.com/bench/repo-{i}.git", "ref": "main"},
         "label": "api"},
        {"resource_type": "github_repo", "resource_ref": {"url": f"https://github.com/bench/web-{i}",
                                                          "default_branch_hint": "main"}},
        {"resource_type": "local_directory", "resource_ref": {"daemon_id": daemon_id,
                                                              "local_path": f"/home/dev/src/project-{i}",
                                                              "execution_mode": "in_place"}, "label": "checkout"},
    ]}


async def _closed_loop(url: str, headers: dict, workers: int, make_request, *, count: int | None = None,
                       seconds: float | None = None) -> tuple[list[float], float, int]:
    """Run `workers` coroutines until `count` requests were sent or `seconds` passed.
    Returns (latencies, wall seconds, errors)."""
    latencies: list[float] = []
    errors = 0
    sent = 0
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits) as client:
        await client.get("/api/health")  # open a connection before timing
        start = time.perf_counter()
        deadline = start + seconds if seconds else None

        async def worker(w: int) -> None:
            nonlocal sent, errors
            while True:
                if count is not None and sent >= count:
                    return
                if deadline is not None and time.perf_counter() >= deadline:
                    return
                i = sent
                sent += 1
                method, path, body = make_request(i)
                t0 = time.perf_counter()
                r = await client.request(method, path, json=body)
                latencies.append(time.perf_counter() - t0)
                if r.status_code >= 400:
                    errors += 1
                    if errors <= 3:
                        log(f"error {r.status_code} on {method} {path}: {r.text[:200]}")
        await asyncio.gather(*(worker(w) for w in range(workers)))
        wall = time.perf_counter() - start
    return latencies, wall, errors


def _op(name: str, latencies: list[float], wall: float, errors: int, workers: int, cpu: float,
        server_cpu: float) -> dict:
    n = len(latencies) or 1
    return {"operation": name, **summary_ms(latencies), "errors": errors, "wall_s": round(wall, 2),
            "requests_per_s": round(len(latencies) / wall, 1) if wall else None, "concurrent_workers": workers,
            "client_cpu_ms_per_request": round(cpu * 1000 / n, 3),
            "server_cpu_ms_per_request": round(server_cpu * 1000 / n, 3),
            "server_cpu_utilisation": round(server_cpu / wall, 2) if wall else None}


def run_backend(name: str, base: str | None, args: argparse.Namespace) -> dict:
    with tempdir(f"pxbench-api-{name}-") as root, database(name, base, root) as url:
        log(f"{name}: starting server on {redact(url)}")
        server = Server(root, url)
        try:
            headers = server.headers()
            # -- create ------------------------------------------------------------------------
            created: list[str] = []
            daemon_id = str(uuid.uuid4())  # registered, not running: the folder is checked at its tasks
            server.api("POST", "/api/daemon/register", {"daemon_id": daemon_id, "name": "bench-machine",
                                                        "runtimes": [{"provider": "command", "version": "1"}]})

            def create_req(i: int):
                return "POST", "/api/projects", project_body(i, daemon_id)
            log(f"{name}: creating {args.projects} projects × 3 resources with {args.create_workers} workers")
            cpu0, scpu0 = time.process_time(), server.cpu_seconds()
            lat, wall, errs = asyncio.run(_closed_loop(server.url, headers, args.create_workers, create_req,
                                                       count=args.projects))
            create = _op("create_project_with_3_resources", lat, wall, errs, args.create_workers,
                         time.process_time() - cpu0, server.cpu_seconds() - scpu0)
            log(f"{name}: create {create['requests_per_s']} req/s p50 {create['p50_ms']} ms p99 {create['p99_ms']} ms")
            projects = server.api("GET", "/api/projects")
            created = [p["id"] for p in projects]
            n_resources = len(server.api("GET", f"/api/projects/{created[0]}/resources"))
            assert len(created) == args.projects, (len(created), args.projects)
            assert n_resources == 3, n_resources
            # -- list --------------------------------------------------------------------------
            rng = random.Random(42)

            def list_req(_i: int):
                return "GET", f"/api/projects/{rng.choice(created)}/resources", None
            ops = [create]
            for workers in args.list_workers:
                # warm-up: first use of each code path, pool connections, caches
                asyncio.run(_closed_loop(server.url, headers, workers, list_req, count=200))
                log(f"{name}: listing resources for {args.list_seconds} s with {workers} workers")
                cpu0, scpu0 = time.process_time(), server.cpu_seconds()
                lat, wall, errs = asyncio.run(_closed_loop(server.url, headers, workers, list_req,
                                                           seconds=args.list_seconds))
                op = _op("list_resources", lat, wall, errs, workers, time.process_time() - cpu0,
                         server.cpu_seconds() - scpu0)
                if name == "sqlite":
                    op["meets_target"] = {
                        "requests_per_s_ge_500": op["requests_per_s"] >= TARGET_LIST_RPS,
                        "p99_le_20ms": op["p99_ms"] <= TARGET_LIST_P99_MS,
                    }
                log(f"{name}: list ({workers} workers) {op['requests_per_s']} req/s p50 {op['p50_ms']} ms "
                    f"p99 {op['p99_ms']} ms; server CPU {op['server_cpu_ms_per_request']} ms/req")
                ops.append(op)
            return {"backend": name, "database": redact(url).split("?")[0], "projects": len(created),
                    "resources_per_project": n_resources, "operations": ops}
        finally:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--projects", type=int, default=1000)
    ap.add_argument("--create-workers", type=int, default=4)
    ap.add_argument("--list-workers", type=int, nargs="+", default=[4, 1],
                    help="one list run per value (concurrent clients); the first is the headline")
    ap.add_argument("--list-seconds", type=float, default=10.0)
    ap.add_argument("--sqlite-only", action="store_true")
    args = ap.parse_args()
    results = [run_backend(n, b, args) for n, b in backends(not args.sqlite_only)]
    sqlite_list = next(op for op in results[0]["operations"] if op["operation"] == "list_resources")
    emit({
        "bench": "api",
        "client": "httpx2.AsyncClient, one process, N concurrent coroutines in a closed loop (keep-alive, "
                  "one connection each); shares the machine's cores with the server",
        "machine": machine(),
        "targets": {"sqlite_list_requests_per_s": f">= {TARGET_LIST_RPS}", "sqlite_list_p99_ms": f"<= {TARGET_LIST_P99_MS}"},
        "meets_target": sqlite_list.get("meets_target"),
        "backends": results,
    })


if __name__ == "__main__":
    main()
