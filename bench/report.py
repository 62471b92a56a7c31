"""Run every bench and write one Markdown table: each figure beside its target and its lower bound.

The lower bound is what the figure cannot beat on this machine, measured in the same run where
the bench measures one (same-replica wake for cross-replica wake, the agent program's own start-up
for dispatch, the fastest request for latencies), or the ideal (0 errors). The load average at
each bench's end is in its row: on a shared machine the figures move with it.

Usage:
  .venv/bin/python bench/report.py                  # run all (several minutes), print the table
  .venv/bin/python bench/report.py --only claim wake --out report.md
  .venv/bin/python bench/report.py --from DIR       # build the table from saved <bench>.json files
Each bench's JSON is kept in --keep DIR (default: a temp dir, printed on stderr).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: bench → extra arguments for a full run
BENCHES: dict[str, list[str]] = {
    "claim": [], "wake": [], "dispatch": [], "load": [], "api": [], "daemon_rss": [],
}


def _get(d: Any, *path: Any) -> Any:
    for p in path:
        if d is None:
            return None
        if isinstance(p, Callable):  # a finder over a list
            d = next((x for x in d if p(x)), None)
        elif isinstance(d, dict):
            d = d.get(p)
        else:
            return None
    return d


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        v = round(v, 1)
    return f"{v}{unit}"


def _ok(value: Any, check: Callable[[Any], bool]) -> str:
    if value is None:
        return "not measured"
    try:
        return "yes" if check(value) else "**no**"
    except TypeError:
        return "—"


def rows(results: dict[str, dict]) -> list[tuple[str, str, str, str, str, str]]:
    """(figure, value, target, meets, lower bound, load average)."""
    out = []

    def add(bench: str, figure: str, value: Any, unit: str, target: str, check: Callable[[Any], bool],
            lower: Any = None, lower_unit: str = "") -> None:
        r = results.get(bench)
        load = _get(r, "machine", "loadavg_1_5_15") if r else None
        out.append((figure, _fmt(value, unit), target, _ok(value, check),
                    _fmt(lower, lower_unit) if not isinstance(lower, str) else lower,
                    ", ".join(str(x) for x in load) if load else "—"))

    claim = results.get("claim")
    for backend in ("postgres", "sqlite"):
        b = _get(claim, "backends", lambda x, b=backend: x.get("backend") == b)
        for limit in (1, 8):
            run = _get(b, "runs", lambda x, n=limit: x.get("limit") == n)
            add("claim", f"claims/s, {backend}, 8 claimers, claim limit {limit}", _get(run, "claims_per_s"), "/s",
                "≥ 200/s", lambda v: v >= 200, "—")
            add("claim", f"double claims, {backend}, limit {limit} ({_get(run, 'tasks_claimed')} claimed)",
                _get(run, "double_claims"), "", "0", lambda v: v == 0, 0)
            add("claim", f"server CPU per claim + finish, {backend}, limit {limit}",
                _get(run, "server_cpu_ms_per_claimed_task"), " ms", "≤ 3 ms", lambda v: v <= 3,
                _get(run, "claim_requests", "min_ms"), " ms fastest claim request")
    wake = results.get("wake")
    add("wake", "cross-replica wake p50 (NOTIFY/LISTEN)", _get(wake, "cross_replica", "p50_ms"), " ms", "≤ 100 ms",
        lambda v: v <= 100, _get(wake, "same_replica_lower_bound", "p50_ms"), " ms same replica")
    add("wake", "cross-replica wake p99", _get(wake, "cross_replica", "p99_ms"), " ms", "reported",
        lambda v: True, _get(wake, "same_replica_lower_bound", "p99_ms"), " ms same replica")
    disp = results.get("dispatch")
    steady = _get(disp, "phases", lambda x: x.get("phase") == "steady")
    overhead = _get(disp, "agent_startup_overhead_from_python_spawn", "p50_ms")
    add("dispatch", "assign → agent started p50 (steady 20/s, SQLite)",
        _get(steady, "assign_returned_to_agent_start", "p50_ms"), " ms", "≤ 100 ms", lambda v: v <= 100,
        overhead, " ms agent's own start-up")
    add("dispatch", "assign → agent started p99", _get(steady, "assign_returned_to_agent_start", "p99_ms"), " ms",
        "≤ 500 ms", lambda v: v <= 500, _get(disp, "agent_startup_overhead_from_python_spawn", "p99_ms"),
        " ms agent's own start-up p99")
    for key, phase_name in (("claimed_to_running_reported (task.started_at)", "claim → running reported"),
                            ("assign_returned_to_claimed (task.dispatched_at)", "assign → claimed")):
        add("dispatch", f"  of which {phase_name}, p99", _get(steady, "breakdown", key, "p99_ms"), " ms",
            "part of the 500 ms", lambda v: True, _get(steady, "breakdown", key, "p50_ms"), " ms p50")
    load = results.get("load")
    for key, label in (("replicas", "2 replicas behind nginx, PostgreSQL"), ("up_sqlite", "1 `up`, SQLite")):
        part = _get(load, key)
        users = _get(part, "users")
        add("load", f"load, {users} users × {_get(part, 'seconds')} s, {label}: errors", _get(part, "failures"), "",
            "0", lambda v: v == 0, 0, "")
        add("load", f"load, {label}: p99 ({_get(part, 'requests_per_s')} req/s)", _get(part, "p99_ms"), " ms",
            "reported", lambda v: True, _get(part, "p50_ms"), " ms p50")
    api = results.get("api")
    sqlite_list = _get(api, "backends", lambda x: x.get("backend") == "sqlite", "operations",
                       lambda x: x.get("operation") == "list_resources")
    add("api", "list resources, SQLite, req/s", _get(sqlite_list, "requests_per_s"), "/s", "≥ 500/s",
        lambda v: v >= 500, None)
    add("api", "list resources, SQLite, p99", _get(sqlite_list, "p99_ms"), " ms", "≤ 20 ms", lambda v: v <= 20,
        _get(sqlite_list, "p50_ms"), " ms p50")
    rss = results.get("daemon_rss")
    add("daemon_rss", "idle daemon RSS incl. children", _get(rss, "rss_including_children_mb"), " MB", "≤ 80 MB",
        lambda v: v <= 80, _get(rss, "rss_daemon_only_mb"), " MB daemon alone")
    return out


def markdown(results: dict[str, dict]) -> str:
    lines = ["| figure | measured | target | meets | lower bound | load avg 1/5/15 |",
             "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows(results)]
    return "\n".join(lines) + "\n"


def run_all(names: list[str], keep: Path) -> dict[str, dict]:
    results = {}
    for name in names:
        print(f"== bench/{name}.py", file=sys.stderr, flush=True)
        p = subprocess.run([sys.executable, str(HERE / f"{name}.py"), *BENCHES[name]], capture_output=True,
                           text=True, timeout=3600)
        sys.stderr.write(p.stderr[-3000:])
        if p.returncode != 0 or not p.stdout.strip():
            print(f"bench/{name}.py failed (exit {p.returncode}); its row says not measured", file=sys.stderr)
            continue
        results[name] = json.loads(p.stdout)
        (keep / f"{name}.json").write_text(p.stdout)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", choices=list(BENCHES))
    ap.add_argument("--from", dest="from_dir", type=Path, help="read <bench>.json files instead of running")
    ap.add_argument("--keep", type=Path, help="where each bench's JSON is written")
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    args = ap.parse_args()
    names = args.only or list(BENCHES)
    if args.from_dir:
        results = {n: json.loads((args.from_dir / f"{n}.json").read_text())
                   for n in names if (args.from_dir / f"{n}.json").exists()}
    else:
        keep = args.keep or Path(tempfile.mkdtemp(prefix="pxbench-report-"))
        keep.mkdir(parents=True, exist_ok=True)
        print(f"bench JSON goes to {keep}", file=sys.stderr)
        results = run_all(names, keep)
    table = markdown(results)
    if args.out:
        args.out.write_text(table)
    print(table, end="")


if __name__ == "__main__":
    main()
