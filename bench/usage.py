"""Issue 27: usage rollups over 100,000 runs — `/api/usage`, `predictorx usage` and the usage page,
p50/p99 per grouping, on SQLite and PostgreSQL (target: p99 ≤ 200 ms each).

A real server per backend; the runs are written straight into its database (100,000 tasks with
their `run_usage` rows over 90 days, 20 agents, 10 projects, 1,000 issues, 5 people; then the day
sums the rollups read are rebuilt from them, as a backfill would: `usage_days.rebuild`), then each
rollup is asked over the whole span (every row counted). The CLI figure is a whole
`python -m predictorx usage` process, start to exit (its own start-up included), beside the same
for `predictorx agent list` (one small request): the difference is the rollup's.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import time
import uuid
from datetime import datetime, timedelta, timezone

from sqlalchemy import insert

from _common import PYTHON, Server, backends, database, emit, log, machine, redact, summary_ms, tempdir

BY = ("agent", "project", "day", "issue", "person")
TARGET_MS = 200


def seed(server: Server, url: str, runs: int, days: int) -> str:
    """The runs, straight into the database; the first day they span."""
    from predictorx.store.db import Database
    from predictorx.store.schema import Issue, Task, User, Member
    from predictorx.store.usage_schema import RunUsage

    ws = server.api("GET", "/api/workspaces")[0]["id"]
    agents = [server.api("POST", "/api/agents", {"name": f"agent-{i}", "provider": "command", "command": ["true"]})["id"]
              for i in range(20)]
    projects = [server.api("POST", "/api/projects", {"title": f"Project {i}"})["id"] for i in range(10)]
    db = Database(url)
    rnd = random.Random(27)
    now = datetime.now(timezone.utc)
    first = (now - timedelta(days=days - 1)).date().isoformat()
    people = [str(uuid.uuid4()) for _ in range(5)]
    with db.engine.begin() as conn:
        conn.execute(insert(User.__table__), [{"id": p, "name": f"person {i}", "created_at": now} for i, p in enumerate(people)])
        conn.execute(insert(Member.__table__), [{"workspace_id": ws, "user_id": p, "role": "member", "created_at": now}
                                                for p in people])
        issues = [{"id": str(uuid.uuid4()), "workspace_id": ws, "number": 1000 + i, "title": f"Issue {i}", "body": "",
                   "status": "done", "priority": "none", "project_id": projects[i % 10], "created_by": people[i % 5],
                   "created_at": now, "updated_at": now} for i in range(1000)]
        conn.execute(insert(Issue.__table__), issues)
    done = 0
    while done < runs:
        n = min(5000, runs - done)
        tasks, usage = [], []
        for _ in range(n):
            issue = issues[rnd.randrange(1000)]
            agent = agents[rnd.randrange(20)]
            started = now - timedelta(days=rnd.randrange(days), seconds=rnd.randrange(86400))
            tid = str(uuid.uuid4())
            tasks.append({"id": tid, "workspace_id": ws, "issue_id": issue["id"], "agent_id": agent,
                          "project_id": issue["project_id"], "status": "completed", "attempt": 1, "message_seq": 0,
                          "cancel_requested": False, "created_at": started, "started_at": started,
                          "finished_at": started, "updated_at": started})
            counts = {"input_tokens": rnd.randrange(100_000), "output_tokens": rnd.randrange(20_000),
                      "cache_read_tokens": rnd.randrange(500_000), "cache_write_tokens": rnd.randrange(50_000),
                      "reasoning_tokens": 0}
            unknown = rnd.random() < 0.05
            usage.append({"task_id": tid, "workspace_id": ws, "day": started.date().isoformat(),
                          "project_id": issue["project_id"], "agent_id": agent, "issue_id": issue["id"],
                          "person_id": issue["created_by"], "model": "claude-sonnet-4-5", **counts,
                          "total_tokens": counts["input_tokens"] + counts["output_tokens"]
                          + counts["cache_read_tokens"] + counts["cache_write_tokens"],
                          "cost_micros": None if unknown else rnd.randrange(2_000_000),
                          "cost_source": None if unknown else "cli", "final": True, "updated_at": started})
        with db.engine.begin() as conn:
            conn.execute(insert(Task.__table__), tasks)
            conn.execute(insert(RunUsage.__table__), usage)
        done += n
        log(f"seeded {done:,} runs")
    with db.write() as s:  # the day sums the rollups read, as `record` keeps them (service/usage_days.py)
        from predictorx.service import usage_days

        usage_days.rebuild(s, ws)
    log("day sums rebuilt")
    if db.engine.dialect.name == "postgresql":
        with db.engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE run_usage")
            conn.commit()
    else:
        with db.engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE")
    db.dispose()
    return first


def timed(call, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        out.append(time.perf_counter() - t0)
    return out


def measure(server: Server, since: str, requests: int, cli_runs: int) -> dict:
    result: dict = {"api": {}, "cli": {}, "page": {}}
    for by in BY:
        params = {"by": by, "since": since}
        check = server.api("GET", "/api/usage", params=params)  # (also the untimed first request of each)
        assert check["totals"]["runs"] > 0
        server.http.get("/usage", params=params, cookies={"px_token": server.token}).raise_for_status()
        result["api"][by] = summary_ms(timed(lambda: server.http.get("/api/usage", params=params).raise_for_status(),
                                             requests))
        result["page"][by] = summary_ms(timed(lambda: server.http.get(
            "/usage", params=params, cookies={"px_token": server.token}).raise_for_status(), requests))

        def cli() -> None:
            p = subprocess.run([PYTHON, "-m", "predictorx", "usage", "--by", by, "--since", since, "--output", "json"],
                               env=server.env, capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, p.stderr
        result["cli"][by] = summary_ms(timed(cli, cli_runs))
        log(f"{by}: api p99 {result['api'][by]['p99_ms']} ms, page p99 {result['page'][by]['p99_ms']} ms, "
            f"cli p99 {result['cli'][by]['p99_ms']} ms")
    def baseline() -> None:  # a one-request command: what any CLI command costs here, start to exit
        p = subprocess.run([PYTHON, "-m", "predictorx", "agent", "list", "--output", "json"], env=server.env,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
    result["cli_baseline_agent_list"] = summary_ms(timed(baseline, cli_runs))
    worst = {kind: max(v["p99_ms"] for v in result[kind].values()) for kind in ("api", "cli", "page")}
    result["worst_p99_ms"] = worst
    result["meets"] = all(v <= TARGET_MS for v in worst.values())
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--requests", type=int, default=50, help="requests per grouping (API and page)")
    ap.add_argument("--cli-runs", type=int, default=20, help="`predictorx usage` processes per grouping")
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--only", choices=("sqlite", "postgres"), help="one backend")
    args = ap.parse_args()
    out = {"bench": "usage", "runs": args.runs, "target_p99_ms": TARGET_MS, "machine": machine(), "backends": {}}
    for name, base in backends(not args.no_postgres):
        if args.only and name != args.only:
            continue
        with tempdir(f"px-bench-usage-{name}-") as root, database(name, base, root) as url:
            server = Server(root, url)
            try:
                since = seed(server, url, args.runs, args.days)
                out["backends"][name] = {"database": redact(url), **measure(server, since, args.requests, args.cli_runs),
                                         "loadavg_after": [round(x, 2) for x in __import__("os").getloadavg()]}
            finally:
                server.stop()
    emit(out)


if __name__ == "__main__":
    main()
