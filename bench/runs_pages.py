"""Issue 26 §6: the Runs page, an agent's page and a daemon's page over many runs — server time
p50/p99 of each (first page, a deep page, each filter) and each page's weight (HTML + CSS + JS).

A real server per backend; the runs are written straight into its database (`--runs` tasks over
20 agents and one daemon, a tenth of them failed, a few hundred running, the rest completed with
their usage), then each page is asked `--requests` times.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import time
import uuid
from datetime import datetime, timedelta, timezone

from sqlalchemy import insert

from _common import Server, backends, database, emit, log, machine, redact, summary_ms, tempdir

TARGET_MS = 200  # the house's page target (issue 13): a page's server time p99


def seed(server: Server, url: str, runs: int) -> dict:
    from predictorx.store.db import Database
    from predictorx.store.schema import Issue, Task
    from predictorx.store.usage_schema import RunUsage

    ws = server.api("GET", "/api/workspaces")[0]["id"]
    daemon_id = str(uuid.uuid4())
    server.api("POST", "/api/daemon/register", {"daemon_id": daemon_id, "name": "box",
                                                "runtimes": [{"provider": "command", "version": "1"}]})
    agents = [server.api("POST", "/api/agents", {"name": f"agent-{i}", "provider": "command", "command": ["true"]})["id"]
              for i in range(20)]
    owner = server.api("GET", "/api/me")["user"]["id"]
    db = Database(url)
    rnd = random.Random(26)
    now = datetime.now(timezone.utc)
    with db.engine.begin() as conn:
        issues = [{"id": str(uuid.uuid4()), "workspace_id": ws, "number": 1000 + i, "title": f"Issue {i}", "body": "",
                   "status": "done", "priority": "none", "created_by": owner, "created_at": now, "updated_at": now}
                  for i in range(1000)]
        conn.execute(insert(Issue.__table__), issues)
    done = 0
    while done < runs:
        n = min(5000, runs - done)
        tasks, usage = [], []
        for k in range(n):
            issue, agent = issues[rnd.randrange(1000)], agents[rnd.randrange(20)]
            started = now - timedelta(seconds=rnd.randrange(90 * 86400))
            status = "running" if done + k < 300 else ("failed" if rnd.random() < 0.1 else "completed")
            tid = str(uuid.uuid4())
            tasks.append({"id": tid, "workspace_id": ws, "issue_id": issue["id"], "agent_id": agent, "status": status,
                          "daemon_id": daemon_id, "attempt": 1, "message_seq": 0, "cancel_requested": False,
                          "failure_reason": "the tests failed" if status == "failed" else None,
                          "created_at": started, "started_at": started,
                          "finished_at": None if status == "running" else started + timedelta(seconds=rnd.randrange(900)),
                          "updated_at": started})
            if status == "completed":
                usage.append({"task_id": tid, "workspace_id": ws, "day": started.date().isoformat(), "agent_id": agent,
                              "issue_id": issue["id"], "person_id": owner, "model": "m", "input_tokens": 100,
                              "output_tokens": 10, "cache_read_tokens": 0, "cache_write_tokens": 0,
                              "reasoning_tokens": 0, "total_tokens": 110, "cost_micros": rnd.randrange(2_000_000),
                              "cost_source": "cli", "final": True, "updated_at": started})
        with db.engine.begin() as conn:
            conn.execute(insert(Task.__table__), tasks)
            conn.execute(insert(RunUsage.__table__), usage)
        done += n
        log(f"seeded {done:,} runs")
    with db.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE")
        conn.commit()
    db.dispose()
    return {"agent": agents[0], "daemon": daemon_id}


def weight(server: Server, path: str) -> int:
    html = server.http.get(path, cookies={"px_token": server.token}).text
    total = len(html.encode())
    for asset in re.findall(r'(?:src|href)="(/static/[^"]+\.(?:js|css))"', html):
        total += len(server.http.get(asset).content)
    return total


def measure(server: Server, ids: dict, requests: int) -> dict:
    pages = {"runs": "/runs", "runs page 100": "/runs?page=100", "runs running": "/runs?state=running",
             "runs waiting": "/runs?state=waiting", "runs failed": "/runs?state=failed",
             "agent": f"/agents/{ids['agent']}", "agent failed": f"/agents/{ids['agent']}?state=failed",
             "daemon": f"/daemons/{ids['daemon']}"}
    out: dict = {}
    for name, path in pages.items():
        server.http.get(path, cookies={"px_token": server.token}).raise_for_status()  # (untimed first)
        times = []
        for _ in range(requests):
            t0 = time.perf_counter()
            server.http.get(path, cookies={"px_token": server.token}).raise_for_status()
            times.append(time.perf_counter() - t0)
        out[name] = {**summary_ms(times), "bytes": weight(server, path)}
        log(f"{name}: p99 {out[name]['p99_ms']} ms, {out[name]['bytes']:,} bytes")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--only", choices=("sqlite", "postgres"))
    args = ap.parse_args()
    out = {"bench": "runs_pages", "runs": args.runs, "target_p99_ms": TARGET_MS, "machine": machine(), "backends": {}}
    for name, base in backends(not args.no_postgres):
        if args.only and name != args.only:
            continue
        with tempdir(f"px-bench-runs-{name}-") as root, database(name, base, root) as url:
            server = Server(root, url)
            try:
                figures = measure(server, seed(server, url, args.runs), args.requests)
                out["backends"][name] = {"database": redact(url), "pages": figures,
                                         "worst_p99_ms": max(v["p99_ms"] for v in figures.values()),
                                         "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
            finally:
                server.stop()
    emit(out)


if __name__ == "__main__":
    main()
