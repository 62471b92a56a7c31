"""Cross-replica wake-up (issue 14, R-SC-2): a task queued through replica B, heard on replica A.

Two `predictorx server start` processes on one PostgreSQL schema. One event stream
(`GET /api/events`, what browsers and daemons hold) on each replica. Each sample assigns an issue
through B and times, from the moment the assign request was sent, the `task_queued` event's arrival
on A's stream (cross-replica: NOTIFY → A's LISTEN → A's subscribers) and on B's (same replica —
the lower bound: it goes through PostgreSQL's NOTIFY too, minus nothing but the other process).

Usage: .venv/bin/python bench/wake.py [--samples 100] [--rate 5]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import EventWatch, Server, emit, log, machine, postgres_base_url, postgres_schema, summary_ms, tempdir

TARGET_P50_MS = 100.0


def listener(server: Server) -> EventWatch:
    """One replica's event stream: when each task's task_queued event arrives."""
    return EventWatch(server, lambda e: e.get("type") == "task_queued")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--rate", type=float, default=5.0)
    args = ap.parse_args()
    base = postgres_base_url()
    if base is None:
        emit({"bench": "wake", "skipped": "PostgreSQL not reachable", "machine": machine()})
        return
    with tempdir("pxbench-wake-") as root, postgres_schema(base) as url:
        a = Server(root / "a", url)
        (root / "b" / "server-home").mkdir(parents=True)
        shutil.copy(a.home / "config.json", root / "b" / "server-home" / "config.json")
        b = Server(root / "b", url)
        try:
            on_a, on_b = listener(a), listener(b)
            for lst in (on_a, on_b):
                lst.start()
                lst.ready.wait(30)
            b.api("POST", "/api/agents", {"name": "sleeper", "provider": "command", "command": ["true"]})
            numbers = [b.api("POST", "/api/issues", {"title": f"wake {i}"})["number"] for i in range(args.samples)]
            sent: dict[str, float] = {}
            log(f"{args.samples} assigns through replica B at {args.rate}/s")
            for n in numbers:
                t0 = time.time()
                task = b.api("POST", f"/api/issues/{n}/assign", {"assignee": "sleeper"})["task"]
                sent[task["id"]] = t0
                time.sleep(1 / args.rate)
            deadline = time.time() + 10
            while time.time() < deadline and (len(on_a.seen) < len(sent) or len(on_b.seen) < len(sent)):
                time.sleep(0.05)
            cross = [on_a.seen[t] - s for t, s in sent.items() if t in on_a.seen]
            same = [on_b.seen[t] - s for t, s in sent.items() if t in on_b.seen]
            cross_s = summary_ms(cross)
            emit({
                "bench": "wake",
                "setup": "2 server processes, one PostgreSQL schema; events through NOTIFY/LISTEN",
                "machine": machine(),
                "target": {"cross_replica_p50_ms": f"<= {TARGET_P50_MS}"},
                "cross_replica": cross_s, "same_replica_lower_bound": summary_ms(same),
                "missed": {"cross": len(sent) - len(cross), "same": len(sent) - len(same)},
                "meets_target": {"cross_replica_p50_le_100ms": cross_s.get("p50_ms", 1e9) <= TARGET_P50_MS,
                                 "none_missed": len(cross) == len(sent)},
            })
        finally:
            a.stop()
            b.stop()


if __name__ == "__main__":
    main()
