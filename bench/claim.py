"""Claim throughput through the HTTP API: 8 daemons, 2,000 queued tasks, PostgreSQL and SQLite (issue 3).

Set-up over the API, as a user and daemons would: 8 daemons registered with POST /api/daemon/register
(user token → one daemon token each, one `command` runtime each); 8 `command` agents with
max_concurrent_tasks 64; 2,000 issues, each assigned to an agent (round robin) — 2,000 queued tasks;
the next run assigns the same issues again. No daemon process runs: the claimers below are the daemons.

Then 8 concurrent claimers — coroutines in this process, each with its own HTTP connection and its
own daemon token — loop: POST /api/daemon/claim {"limit": L} and, for every task it got,
POST /api/daemon/tasks/{id}/finish {"status": "completed"} at once. One run with limit 1 and one with
limit 8 (a fresh 2,000 tasks each). Reported: claims/s (tasks claimed per second of wall time, finishes
included), request latencies, and double claims (task ids handed out more than once — must be 0),
plus a check that every queued task was claimed exactly once and ended completed.

Usage: .venv/bin/python bench/claim.py [--tasks 2000] [--claimers 8] [--limits 1 8] [--sqlite-only|--postgres-only]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx2 as httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    Server, backends, database, emit, log, machine, machine_busy_seconds, postgres_cpu_seconds, redact, summary_ms,
    tempdir,
)

TARGET_CLAIMS_PER_S = 200
TARGET_SERVER_CPU_MS = 3.0
AGENTS = 8


async def _parallel(server: Server, n: int, request, workers: int = 4) -> list:
    """Send request(client, i) for i in range(n) from `workers` coroutines; answers in order of i."""
    out: list = [None] * n
    next_i = 0
    limits = httpx.Limits(max_connections=workers)
    async with httpx.AsyncClient(base_url=server.url, headers=server.headers(), timeout=60, limits=limits) as c:
        async def worker() -> None:
            nonlocal next_i
            while next_i < n:
                i = next_i
                next_i += 1
                r = await request(c, i)
                if r.status_code >= 400:
                    raise RuntimeError(f"{r.request.method} {r.request.url.path}: {r.status_code} {r.text[:300]}")
                out[i] = r.json()
        await asyncio.gather(*(worker() for _ in range(workers)))
    return out


def create_issues(server: Server, n: int) -> list[int]:
    made = asyncio.run(_parallel(server, n, lambda c, i: c.post("/api/issues", json={"title": f"claim bench {i}"})))
    return [m["number"] for m in made]


def queue_tasks(server: Server, numbers: list[int]) -> list[str]:
    """Assign every issue to an agent (round robin): one queued task each. Returns the task ids.
    Issues are reused between runs: once a task ended, assigning again queues a new one."""
    answers = asyncio.run(_parallel(server, len(numbers), lambda c, i: c.post(
        f"/api/issues/{numbers[i]}/assign", json={"assignee": f"agent-{i % AGENTS}"})))
    return [a["task"]["id"] for a in answers]


async def claim_run(server: Server, tokens: list[str], expected: int, limit: int, chain: bool = True,
                    timeout: float = 120) -> dict:
    claimed: list[str] = []
    claim_lat: list[float] = []
    finish_lat: list[float] = []
    empty = 0
    errors: Counter = Counter()
    done = asyncio.Event()
    clients = [httpx.AsyncClient(base_url=server.url, headers=server.headers(t), timeout=60,
                                 limits=httpx.Limits(max_connections=1)) for t in tokens]
    try:
        for c in clients:
            await c.get("/api/health")
        deadline = time.monotonic() + timeout
        start = time.perf_counter()

        async def claimer(c: httpx.AsyncClient) -> None:
            nonlocal empty
            got: list[str] = []  # claimed, not yet finished: finished even after the last claim
            while (got or not done.is_set()) and time.monotonic() < deadline:
                if not got:
                    t0 = time.perf_counter()
                    r = await c.post("/api/daemon/claim", json={"limit": limit})
                    claim_lat.append(time.perf_counter() - t0)
                    if r.status_code >= 400:
                        errors[f"claim {r.status_code}"] += 1
                        await asyncio.sleep(0.01)
                        continue
                    got = [item["task"]["id"] for item in r.json()["tasks"]]
                    if not got:
                        empty += 1
                        if len(claimed) >= expected:
                            done.set()
                            return
                        await asyncio.sleep(0.005)  # rows locked by others, or agents at their limit
                        continue
                    claimed.extend(got)
                batch, got = got, []
                for i, tid in enumerate(batch):
                    # The last finish of a batch claims the next batch in the same request.
                    body: dict = {"status": "completed"}
                    if chain and i == len(batch) - 1:
                        body["claim_next"] = limit
                    t1 = time.perf_counter()
                    f = await c.post(f"/api/daemon/tasks/{tid}/finish", json=body)
                    finish_lat.append(time.perf_counter() - t1)
                    if f.status_code >= 400:
                        errors[f"finish {f.status_code}"] += 1
                    elif "claim_next" in body:
                        got = [item["task"]["id"] for item in f.json().get("claimed", [])]
                        claimed.extend(got)
                if len(claimed) >= expected:
                    done.set()
        await asyncio.gather(*(claimer(c) for c in clients))
        wall = time.perf_counter() - start
    finally:
        for c in clients:
            await c.aclose()
    counts = Counter(claimed)
    return {"claimed": claimed, "wall": wall, "claim_lat": claim_lat, "finish_lat": finish_lat, "empty": empty,
            "errors": dict(errors), "double": sum(1 for v in counts.values() if v > 1)}


def run_backend(name: str, base: str | None, args: argparse.Namespace) -> dict:
    with tempdir(f"pxbench-claim-{name}-") as root, database(name, base, root) as url:
        log(f"{name}: starting server on {redact(url)}")
        # No daemon process heartbeats here; keep the sweeper from treating the claimers as dead.
        server = Server(root, url, PREDICTORX_DAEMON_TIMEOUT="600", PREDICTORX_TASK_LEASE="600")
        try:
            tokens = []
            for i in range(args.claimers):
                answer = server.api("POST", "/api/daemon/register", {
                    "daemon_id": str(uuid.uuid4()), "name": f"bench-daemon-{i}", "hostname": "bench",
                    "version": "bench", "capabilities": ["local-worktree-v1"],
                    "runtimes": [{"provider": "command", "version": "bench", "capabilities": []}]})
                tokens.append(answer["token"])
            for a in range(AGENTS):
                server.api("POST", "/api/agents", {"name": f"agent-{a}", "provider": "command",
                                                   "command": ["true"], "max_concurrent_tasks": 64})
            log(f"{name}: creating {args.tasks} issues")
            t0 = time.perf_counter()
            numbers = create_issues(server, args.tasks)
            create_rate = args.tasks / (time.perf_counter() - t0)
            runs = []
            for limit in args.limits:
                log(f"{name}: queueing {args.tasks} tasks (assigning the issues to {AGENTS} agents)")
                t0 = time.perf_counter()
                ids = queue_tasks(server, numbers)
                queue_s = time.perf_counter() - t0
                queued = set(ids)
                assert len(queued) == len(ids) == args.tasks
                log(f"{name}: {len(queued)} queued in {queue_s:.1f} s; {args.claimers} claimers, limit {limit}")
                scpu0, cpu0, pg0, busy0 = (server.cpu_seconds(), time.process_time(), postgres_cpu_seconds(),
                                           machine_busy_seconds())
                res = asyncio.run(claim_run(server, tokens, len(queued), limit, chain=not args.no_chain))
                server_cpu, client_cpu = server.cpu_seconds() - scpu0, time.process_time() - cpu0
                pg_cpu, busy = postgres_cpu_seconds() - pg0, machine_busy_seconds() - busy0
                got = set(res["claimed"])
                statuses = Counter(t["status"] for t in server.api("GET", "/api/tasks", params={"limit": 1000})
                                   if t["id"] in queued)  # the newest 1,000 tasks
                rate = len(res["claimed"]) / res["wall"]
                run = {
                    "limit": limit, "claimers": args.claimers, "tasks_queued": len(queued),
                    "tasks_claimed": len(res["claimed"]), "distinct_tasks_claimed": len(got),
                    "double_claims": res["double"], "unclaimed": len(queued - got), "foreign": len(got - queued),
                    "wall_s": round(res["wall"], 2), "claims_per_s": round(rate, 1),
                    "claim_requests": summary_ms(res["claim_lat"]), "finish_requests": summary_ms(res["finish_lat"]),
                    "empty_claims": res["empty"], "errors": res["errors"],
                    "statuses_of_newest_1000": dict(statuses),
                    "server_cpu_ms_per_claimed_task": round(server_cpu * 1000 / max(1, len(got)), 2),
                    "client_cpu_ms_per_claimed_task": round(client_cpu * 1000 / max(1, len(got)), 2),
                    "postgres_cpu_ms_per_claimed_task": (round(pg_cpu * 1000 / max(1, len(got)), 2)
                                                         if name == "postgres" else None),
                    "server_process_cpu_utilisation": round(server_cpu / res["wall"], 2),
                    "machine_cpu_busy_fraction": round(busy / res["wall"] / (os.cpu_count() or 1), 2),
                    "queueing": {"issues_created_per_s": round(create_rate, 1),
                                 "assigns_per_s": round(len(ids) / queue_s, 1), "client_workers": 4},
                    "requests": len(res["claim_lat"]) + len(res["finish_lat"]),
                    "meets_target": {"claims_per_s_ge_200": rate >= TARGET_CLAIMS_PER_S,
                                     "server_cpu_le_3ms": server_cpu * 1000 / max(1, len(got)) <= TARGET_SERVER_CPU_MS,
                                     "zero_double_claims": res["double"] == 0,
                                     "every_task_claimed_once": got == queued and res["double"] == 0},
                }
                log(f"{name}: limit {limit}: {run['claims_per_s']} claims/s, {run['double_claims']} double, "
                    f"{run['unclaimed']} unclaimed, claim p50 {run['claim_requests'].get('p50_ms')} ms")
                runs.append(run)
            return {"backend": name, "database": redact(url).split("?")[0], "runs": runs}
        finally:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--claimers", type=int, default=8)
    ap.add_argument("--limits", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--no-chain", action="store_true",
                    help="claim with POST /claim only (not the finish that claims the next)")
    ap.add_argument("--sqlite-only", action="store_true")
    ap.add_argument("--postgres-only", action="store_true")
    args = ap.parse_args()
    chosen = backends(not args.sqlite_only)
    if args.postgres_only:
        chosen = [b for b in chosen if b[0] == "postgres"]
    # PostgreSQL first: it is the backend the target is stated for.
    chosen.sort(key=lambda b: b[0] != "postgres")
    results = [run_backend(n, b, args) for n, b in chosen]
    pg = next((r for r in results if r["backend"] == "postgres"), None)
    emit({
        "bench": "claim",
        "client": "one process, N asyncio claimers, each an httpx2.AsyncClient with one keep-alive connection "
                  "and its own daemon token; claim then finish each task at once"
                  + ("" if args.no_chain else "; the last finish of a batch claims the next batch (claim_next)"),
        "target_server_cpu_ms_per_claim_and_finish": TARGET_SERVER_CPU_MS,
        "machine": machine(),
        "targets": {"claims_per_s": f">= {TARGET_CLAIMS_PER_S} on PostgreSQL", "double_claims": "0"},
        "meets_target": {f"postgres_limit_{r['limit']}": r["meets_target"] for r in pg["runs"]} if pg else
        "PostgreSQL not reachable",
        "backends": results,
    })


if __name__ == "__main__":
    main()
