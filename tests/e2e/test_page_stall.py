"""Issue 29 §5: a member hammering a heavy issue page cannot stall the server.

Twenty comments of ~100 KB Markdown tables made one view of the issue page take 47 s while
`/api/health` waited 43 s, and two views during a running task made the sweeper fail it. Here,
against a real server process (SQLite, one process; PostgreSQL, two worker processes), several
clients view that page in a loop for a while; meanwhile the task's daemon heartbeats and a prober
asks `/api/health`. No heartbeat may come near the daemon timeout, the task must still be running,
and health must keep answering quickly. The assertions are generous (this machine is shared);
bench/pagestall.py measures the same scenario and prints the real figures (target: health p99
≤ 100 ms).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from .harness import Server

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "pagestall.py"
sys.path.insert(0, str(_BENCH.parent))  # its `_common` import
_spec = importlib.util.spec_from_file_location("bench_pagestall", _BENCH)
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # its dataclasses look their module up
_spec.loader.exec_module(bench)

#: Generous bounds for a shared machine: a stall is tens of seconds (on the code before the fix:
#: health p99 90 s, and the task failed), while an honest server on a loaded machine answers in
#: seconds at worst (a fresh-clone CI run at load 15 saw a p99 of 3.1 s with PostgreSQL's two workers).
HEALTH_P99_MS = 10_000


def test_hammering_an_issue_page_stalls_neither_health_nor_the_daemons(tmp_path, database_url):
    workers = ("--workers", "2") if database_url.startswith("postgresql") else ()
    server = Server(tmp_path / "home", database_url, args=workers, **bench.SERVER_ENV)
    try:
        seeded = bench.seed(server)
        result = bench.hammer(server, seeded, clients=4, seconds=10)
    finally:
        server.stop()
    health, beats, views = result["health"], result["heartbeat"], result["page_views"]
    assert result["task_status"] == "running", result  # the sweeper failed it: heartbeats were starved
    assert not beats["errors"] and beats["max_ms"] < bench.DAEMON_TIMEOUT_S * 1000 / 2, beats
    assert not health["errors"] and health["p99_ms"] < HEALTH_P99_MS, result
    assert not views["errors"] and views["count"] >= 4, views
    assert views["max_bytes"] < 300_000, views  # the page is bounded (it was 11 MB)
