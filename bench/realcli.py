"""The real Claude Code through Predictor X (issue 9): 4 daemons on SQLite, the pinned `claude`
(tests/realcli/node_modules) against the scripted Messages API server of the tests (loopback).

- assignment → the CLI's first model request, per task: the moment `POST /api/issues` (with the
  assignee) returned, to the moment the model server received the task's first conversation
  request (the prompt names the issue), both this machine's wall clock;
- lower bound: a bare `claude -p` (same environment, same server, no daemon, no agents-room)
  from spawn to its first model request, run one at a time;
- the CLI's result → task completed: the stream log's last write (the daemon wrote the CLI's
  result line) to the task's `finished_at` (server clock, same machine).

Targets: ratio of p50s ≤ 1.3; result → completed p95 ≤ 1 s.

Usage: .venv/bin/python bench/realcli.py [--tasks 50] [--daemons 4] [--rate 2] [--bare 10]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))
from _common import Daemon, Server, emit, log, machine, percentile, sqlite_url, summary_ms, tempdir, wait_until  # noqa: E402
from realcli.clis import CLAUDE  # noqa: E402
from realcli.modelserver import AnthropicServer  # noqa: E402

TARGET_RATIO_P50 = 1.3
TARGET_RESULT_TO_DONE_P95_MS = 1000.0
_ISSUE = re.compile(r"working on issue #(\d+)")


def _p95(seconds: list[float]) -> float:
    return round(percentile(sorted(x * 1000 for x in seconds), 95), 2)


def bare_starts(env: dict[str, str], model: AnthropicServer, workdir: Path, runs: int) -> list[float]:
    """Spawn → first model request of a bare `claude -p`, one at a time."""
    out = []
    for _ in range(runs):
        seen = len(model.requests)
        started = time.time()
        proc = subprocess.Popen([str(CLAUDE.path()), "-p", "--output-format", "stream-json", "--verbose",
                                 "--permission-mode", "bypassPermissions"], cwd=workdir, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc.communicate(b"bare run: say hello", timeout=120)
        first = next(r for r in model.requests[seen:] if r.turn in ("tool", "answer"))
        out.append(first.at - started)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=50)
    ap.add_argument("--daemons", type=int, default=4)
    ap.add_argument("--max-tasks", type=int, default=4)
    ap.add_argument("--rate", type=float, default=2.0, help="assignments per second")
    ap.add_argument("--bare", type=int, default=10, help="bare `claude -p` runs for the lower bound")
    args = ap.parse_args()
    if CLAUDE.path() is None:
        sys.exit("the pinned Claude Code is not installed: run `make test` once (npm ci in tests/realcli)")

    with tempdir("pxbench-realcli-") as root, AnthropicServer(command="true", answer="ok") as model:
        env = CLAUDE.environment(root / "cli-home", model)
        (root / "bare").mkdir()
        log("bare claude -p runs")
        bare = bare_starts({**env, "HOME": env["HOME"]}, model, root / "bare", args.bare)

        server = Server(root / "server", sqlite_url(root))
        daemons = []
        try:
            for i in range(args.daemons):
                daemons.append(Daemon(server, root / f"daemon-{i}", max_tasks=args.max_tasks, wait=False,
                                      PREDICTORX_WORKSPACES_ROOT=str(root / f"ws-{i}"), **env))
            for d in daemons:
                d.wait_ready()
            server.api("POST", "/api/agents", {"name": "claude-bench", "provider": "claude",
                                               "max_concurrent_tasks": args.daemons * args.max_tasks})
            log(f"{args.tasks} assignments at {args.rate}/s")
            assigned: dict[int, tuple[float, str]] = {}
            for i in range(args.tasks):
                due = time.monotonic() + 1 / args.rate
                issue = server.api("POST", "/api/issues", {"title": f"bench job {i}", "assignee": "claude-bench"})
                returned = time.time()
                task_id = server.api("GET", f"/api/issues/{issue['number']}/runs")[0]["id"]
                assigned[issue["number"]] = (returned, task_id)
                time.sleep(max(0.0, due - time.monotonic()))
            tasks = {}
            for number, (_, task_id) in assigned.items():
                tasks[number] = wait_until(
                    lambda t=task_id: (x := server.api("GET", f"/api/tasks/{t}"))["status"]
                    in ("completed", "failed", "cancelled") and x, 600, 0.2, f"task {task_id}")
            first_request: dict[int, float] = {}
            for r in model.requests:
                m = _ISSUE.search(r.text) if r.turn == "tool" else None
                if m and int(m.group(1)) in assigned:
                    first_request.setdefault(int(m.group(1)), r.at)
            to_first = [first_request[n] - assigned[n][0] for n in assigned if n in first_request]
            result_to_done = []
            for number, task in tasks.items():
                if task["status"] != "completed":
                    continue
                logs = list(root.glob(f"ws-*/*/{task['id']}/logs/claude.stream.jsonl"))
                finished = datetime.fromisoformat(task["finished_at"].replace("Z", "+00:00")).timestamp()
                if logs:
                    result_to_done.append(finished - logs[0].stat().st_mtime)
            failed = [t["failure_reason"] for t in tasks.values() if t["status"] != "completed"]
        finally:
            for d in daemons:
                d.stop()
            server.stop()

    p50_ratio = round((percentile(sorted(to_first), 50) / percentile(sorted(bare), 50)), 2) if to_first and bare else None
    emit({
        "bench": "realcli",
        "cli": f"claude {CLAUDE.path() and subprocess.run([str(CLAUDE.path()), '--version'], capture_output=True, text=True, timeout=30).stdout.strip()}",
        "database": "sqlite", "daemons": args.daemons, "tasks": args.tasks, "rate_per_s": args.rate,
        "completed": len(tasks) - len(failed), "failed": len(failed), "failure_reasons": sorted(set(failed))[:3],
        "assignment_to_first_model_request": {**summary_ms(to_first), "p95_ms": _p95(to_first)},
        "bare_claude_start_to_first_model_request": {**summary_ms(bare), "p95_ms": _p95(bare)},
        "ratio_p50": p50_ratio, "target_ratio_p50": TARGET_RATIO_P50,
        "cli_result_to_task_completed": {**summary_ms(result_to_done), "p95_ms": _p95(result_to_done)},
        "target_result_to_completed_p95_ms": TARGET_RESULT_TO_DONE_P95_MS,
        "machine": machine(),
    })


if __name__ == "__main__":
    main()
