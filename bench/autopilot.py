"""Autopilot schedule drift (issue 27 §5): how late a cron autopilot fires, with the real
scheduler loop of real server processes on the system clock.

`--autopilots` autopilots with `* * * * *` are made at once (all due at the same second: the worst
case, fired one after another), then the bench waits out `--minutes` due minutes. Per firing:
`fire` = the firing's fired_at − its due time (the scheduler woke and read its clock) and `issue` =
the created issue's created_at − the due time (the issue written and committed: what a person
sees). SQLite with one server; PostgreSQL with two replicas on one schema, where it also counts due
slots fired more than once (must be 0).

Usage: .venv/bin/python bench/autopilot.py [--autopilots 30] [--minutes 1] [--backend both|sqlite|postgres]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Server, database, emit, log, machine, postgres_base_url, summary_ms, tempdir

TARGET_P99_MS = 1000.0


def _run(name: str, url: str, root: Path, args: argparse.Namespace) -> dict:
    servers = [Server(root / "a", url)]
    if name == "postgres":
        (root / "b" / "server-home").mkdir(parents=True)
        shutil.copy(servers[0].home / "config.json", root / "b" / "server-home" / "config.json")
        servers.append(Server(root / "b", url))
    a = servers[0]
    try:
        ids = [a.api("POST", "/api/autopilots", {"name": f"drift-{i}", "title": "Drift {{due}}",
                                                  "cron": "* * * * *"})["id"] for i in range(args.autopilots)]
        first_due = datetime.fromisoformat(a.api("GET", f"/api/autopilots/{ids[0]}")["next_due_at"])
        until = first_due.timestamp() + 60 * (args.minutes - 1) + 5
        log(f"{name}: {len(ids)} autopilots, first due {first_due.isoformat()}, waiting {until - time.time():.0f} s")
        time.sleep(max(0.0, until - time.time()))
        fire, issue, per_slot = [], [], {}
        for autopilot_id in ids:
            for f in a.api("GET", f"/api/autopilots/{autopilot_id}")["firings"]:
                due = datetime.fromisoformat(f["due_at"])
                per_slot[(autopilot_id, due)] = per_slot.get((autopilot_id, due), 0) + 1
                fire.append((datetime.fromisoformat(f["fired_at"]) - due).total_seconds())
                made = a.api("GET", f"/api/issues/{f['issue_number']}")["created_at"]
                issue.append((datetime.fromisoformat(made) - due).total_seconds())
        fired = [s.api("GET", "/api/autopilot-scheduler")["fired"] for s in servers]
        return {"backend": name, "replicas": len(servers), "autopilots": len(ids), "due_minutes": args.minutes,
                "firings": len(fire), "expected_firings": len(ids) * args.minutes,
                "slots_fired_twice": sum(1 for n in per_slot.values() if n > 1), "fired_per_replica": fired,
                "fire_drift": summary_ms(fire), "issue_drift": summary_ms(issue),
                "meets_target": bool(issue) and summary_ms(issue)["p99_ms"] <= TARGET_P99_MS}
    finally:
        for s in servers:
            s.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--autopilots", type=int, default=30)
    ap.add_argument("--minutes", type=int, default=1)
    ap.add_argument("--backend", choices=("both", "sqlite", "postgres"), default="both")
    args = ap.parse_args()
    wanted = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    results = []
    for name in wanted:
        base = postgres_base_url() if name == "postgres" else None
        if name == "postgres" and base is None:
            log("PostgreSQL not reachable: skipping it")
            continue
        with tempdir(f"pxbench-autopilot-{name}-") as root, database(name, base, root) as url:
            results.append(_run(name, url, root, args))
    emit({"bench": "autopilot", "target": {"issue_drift_p99_ms": TARGET_P99_MS}, "results": results,
          "machine": machine()})


if __name__ == "__main__":
    main()
