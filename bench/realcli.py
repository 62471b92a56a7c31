"""The real Claude Code through Predictor X (issue 9): 4 daemons on SQLite, the pinned `claude`
(tests/realcli/node_modules) against the scripted Messages API server of the tests (loopback).

- assignment → the CLI's first model request, per task: the moment `POST /api/issues` (with the
  assignee) returned, to the moment the model server received the task's first conversation
  request (the prompt names the issue), both this machine's wall clock;
- lower bound: a bare `claude -p` (same environment, same server, no daemon, no agents-room)
  from spawn to its first model request, run one at a time. Same environment means the one a
  task's agent inherits: this shell's, with the CLI's configuration on top (the daemons are
  started with it too) — a person's own `claude -p` here pays what this environment costs (e.g.
  `NODE_EXTRA_CA_CERTS`, ~15 ms of Claude Code's network set-up on this machine);
- beside it, the same bare run with the two MCP servers a task's run has (agents-room's and
  predictorx's, configured as the daemon configures them, no daemon): what Claude Code's own MCP
  start-up costs, which no platform run can avoid (`bare_with_mcp_servers`, `mcp_floor_ms`);
- the CLI's result → task completed: the stream log's last write (the daemon wrote the CLI's
  result line) to the task's `finished_at` (server clock, same machine).

Two phases, so the figures compare like with like and the machine is not simply saturated:

1. `sequential`: one task at a time (`--sequential`, default 10), each right after a bare run so
   both see the same load — the per-task overhead against the bare start (`ratio_p50` of this
   phase is against those paired bare runs), and the CPU seconds one task costs (daemons, their
   agents and helper processes, server; the bare run's CPU beside it). The bench asks the server
   whether a task ended only once the model answered its last turn (every 2 s before), and what
   its asking cost the server is taken out: its own requests are not the platform's cost
   (`bench_looks_cpu_s_per_task`); `cpu_s_per_task_split` says where the rest went;
2. `load`: `--tasks` (default 50) assignments at `--rate` per second — by default the rate the
   machine can serve: half of its cores' CPU seconds per second over the CPU one task took in
   phase 1 (reported as `rate_per_s`, with how it was chosen). Its lower bound is measured the
   same way: `--bare-load` (default 25) bare runs started at that rate, overlapping as the tasks
   did (`bare_at_load_rate`); the phase's `ratio_p50` is against it, and `ratio_p50_vs_idle_bare`
   against the bare runs made one at a time on an otherwise idle machine.

The load average is reported after each phase (`loadavg_1_5_15`): on a shared machine every
figure moves with it. Targets: ratio of p50s ≤ 1.3 (load phase); result → completed p95 ≤ 1 s;
a task's CPU ≤ 1.3× a bare run's (`cpu_task_over_bare`, issue 30: against all bare runs made one
at a time; beside it `cpu_task_over_paired_bare`, against only those made right before each task,
under the same load).

With `--harness-call` a task's agent first calls the harness tool `harness_state`, as its prompt
asks a real agent to (through `predictorx mcp`, the server's sweep): a bare run has no such tool
and runs its shell command instead, so the task's figures then include a tool call of the platform.

Usage: .venv/bin/python bench/realcli.py [--tasks 50] [--sequential 10] [--daemons 4] [--rate R] [--bare 10]
                                         [--harness-call]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))
from _common import Daemon, Server, emit, log, machine, percentile, sqlite_url, summary_ms, tempdir, wait_until  # noqa: E402
from realcli.clis import CLAUDE  # noqa: E402
from realcli.modelserver import AnthropicServer  # noqa: E402

TARGET_RATIO_P50 = 1.3
TARGET_RESULT_TO_DONE_P95_MS = 1000.0
#: issue 30: a task's CPU (server, daemons and everything they started) over a bare run's
TARGET_CPU_TASK_OVER_BARE = 1.3
_ISSUE = re.compile(r"working on issue #(\d+)")
#: `--harness-call`: the tool a task's agent calls first, as its prompt asks
HARNESS_TOOL = "mcp__predictorx__harness_state"


class _HarnessCalling(AnthropicServer):
    """`--harness-call`: a conversation offered the harness's `harness_state` calls it first (loading
    it through ToolSearch, as Claude Code defers MCP tools); one that is not (a bare run) runs its
    shell command. (The choice is the server's one `call`, set
    per request: no bare run overlaps a task here.)"""

    def reply(self, req: Any) -> Any:
        # (Claude Code defers MCP tools behind ToolSearch: their names are in the system prompt)
        self.call = (HARNESS_TOOL, {}) if HARNESS_TOOL in req.text else None
        return super().reply(req)


def _p95(seconds: list[float]) -> float:
    return round(percentile(sorted(x * 1000 for x in seconds), 95), 2)


def _ms(seconds: list[float]) -> dict:
    return {**summary_ms(seconds), "p95_ms": _p95(seconds)}


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def mcp_servers_args(env: dict[str, str], workdir: Path) -> list[str]:
    """The --mcp-config arguments of a task's run, without the daemon: agents-room's front and
    predictorx's, each as the daemon's run configuration starts it."""
    from agents_room.harness_config import mcp_entry
    from predictorx.daemon.workflowhooks import mcp_setup

    config = workdir.parent / "bare-mcp"
    config.mkdir(exist_ok=True)
    room = config / "agents-room.mcp.json"
    room.write_text(json.dumps({"mcpServers": {"agents-room": mcp_entry("claude", config / "room.db", fast=True)}}))
    return ["--mcp-config", str(room), *mcp_setup("claude", config, {"PREDICTORX_SERVER_URL": "http://127.0.0.1:9"})]


def bare_starts(env: dict[str, str], model: AnthropicServer, workdir: Path, runs: int,
                extra: tuple[str, ...] = ()) -> tuple[list[float], float]:
    """Spawn → first model request of a bare `claude -p`, one at a time; and its CPU seconds per run."""
    out = []
    cpu0 = _children_cpu()
    for _ in range(runs):
        seen = len(model.requests)
        started = time.time()
        proc = subprocess.Popen([str(CLAUDE.path()), "-p", "--output-format", "stream-json", "--verbose",
                                 "--permission-mode", "bypassPermissions", *extra], cwd=workdir, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc.communicate(b"bare run: say hello", timeout=120)
        first = next(r for r in model.requests[seen:] if r.turn in ("tool", "answer"))
        out.append(first.at - started)
    return out, (_children_cpu() - cpu0) / max(1, runs)


def bare_at_rate(env: dict[str, str], model: AnthropicServer, workdir: Path, runs: int, rate: float) -> list[float]:
    """Spawn → first model request of bare `claude -p` runs started `rate` per second, overlapping
    as the load phase's tasks do: the lower bound under the same concurrency (an idle machine's
    bare start is not one for a task that shares the CPU with other agents)."""
    import threading

    started: dict[int, float] = {}

    def one(i: int) -> None:
        started[i] = time.time()
        proc = subprocess.Popen([str(CLAUDE.path()), "-p", "--output-format", "stream-json", "--verbose",
                                 "--permission-mode", "bypassPermissions"], cwd=workdir, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc.communicate(f"bare run {i}: say hello".encode(), timeout=120)

    seen = len(model.requests)
    threads = []
    t0 = time.monotonic()
    for i in range(runs):
        time.sleep(max(0.0, t0 + i / rate - time.monotonic()))
        threads.append(threading.Thread(target=one, args=(i,)))
        threads[-1].start()
    for t in threads:
        t.join(180)
    first: dict[int, float] = {}
    for r in model.requests[seen:]:
        m = re.search(r"bare run (\d+):", r.text) if r.turn in ("tool", "answer") else None
        if m:
            first.setdefault(int(m.group(1)), r.at)
    return [first[i] - started[i] for i in sorted(first) if i in started]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _threads_cpu(pid: int) -> float:
    """CPU seconds the threads of a process alive now have run (/proc/…/task/*/schedstat)."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[0])
        except (OSError, ValueError, IndexError):  # (the thread ended meanwhile)
            pass
    return total / 1e9


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a process, of the children it has waited for (its agents, their hooks), and of
    its descendants still alive (the daemon's `agents-room run-config --serve`, an agent still
    running): the daemon's helper processes are the platform's cost too."""
    import psutil

    def total(p: psutil.Process) -> float:
        t = p.cpu_times()
        return t.user + t.system + t.children_user + t.children_system

    proc = psutil.Process(pid)
    used = total(proc)
    for child in proc.children(recursive=True):
        try:
            used += total(child)
        except psutil.Error:  # (it ended meanwhile: its parent's children_* has it once reaped)
            pass
    return used


class Platform:
    """A server on SQLite and `daemons` daemons, each with its own workspaces."""

    def __init__(self, root: Path, env: dict[str, str], daemons: int, max_tasks: int) -> None:
        self.root = root
        self.server = Server(root / "server", sqlite_url(root))
        self.daemons: list[Daemon] = []
        self.looks_cpu: list[float] = []
        for i in range(daemons):
            self.daemons.append(Daemon(self.server, root / f"daemon-{i}", max_tasks=max_tasks, wait=False,
                                       PREDICTORX_WORKSPACES_ROOT=str(root / f"ws-{i}"), **env))
        for d in self.daemons:
            d.wait_ready()
        self.server.api("POST", "/api/agents", {"name": "claude-bench", "provider": "claude",
                                                "max_concurrent_tasks": daemons * max_tasks})

    def cpu(self) -> float:
        return self.server.cpu_seconds() + sum(_tree_cpu(d.proc.pid) for d in self.daemons)

    def usage(self) -> tuple[float, float, float]:
        """CPU seconds so far: everything the platform's (`cpu()`), the server's, the daemons' own
        (not what they started)."""
        import psutil

        own = sum(sum(psutil.Process(d.proc.pid).cpu_times()[:2]) for d in self.daemons)
        return self.cpu(), self.server.cpu_seconds(), own

    def look(self, number: int) -> list[dict]:
        """The bench's one request per look (an issue's runs), and what it cost the server, kept in
        `looks_cpu` to be taken out of the platform's CPU: the bench's asking is not the platform's
        cost. Timed from the server's threads' own run times (schedstat, nanoseconds; psutil's
        figures move in 10 ms ticks), over the moments the request took."""
        before = _threads_cpu(self.server.proc.pid)
        runs = self.server.api("GET", f"/api/issues/{number}/runs")
        self.looks_cpu.append(max(0.0, _threads_cpu(self.server.proc.pid) - before))
        return runs

    def looks_since(self, first: int) -> float:
        """What the looks since the `first`-th cost the server: their median times their number —
        a look that met a daemon's request in the server (a finish comes as the bench looks)
        would take part of it out too."""
        costs = self.looks_cpu[first:]
        return statistics.median(costs) * len(costs) if costs else 0.0

    def stop(self) -> None:
        for d in self.daemons:
            d.stop()
        self.server.stop()

    def _wait(self, model: AnthropicServer, number: int) -> dict:
        """The issue's task once it ended, read from the issue's run list (the one request the bench
        makes per look: it names the task and its status). The server is asked every 0.2 s only
        once the model has answered the task's last turn (its CLI is then ending), and every 2 s
        before, in case it failed: a bench asking ten times a second all along cost the server
        ~20 ms of CPU per task (1.6 ms a request), which was counted as the platform's (issue 30);
        so did a look at the run list right after the assignment and a second request per look for
        the task itself (~10 ms a task), now left out."""
        mark = f"working on issue #{number}:"
        seen, answered, asked = 0, False, time.monotonic()

        def ended() -> dict | None:
            nonlocal seen, answered, asked
            new = model.requests[seen:]
            seen += len(new)
            if not answered and any(r.turn == "answer" and mark in r.text for r in new):
                answered, asked = True, time.monotonic()  # (its CLI and the daemon still have to end it)
            if time.monotonic() < asked + (0.2 if answered else 2.0):
                return None
            asked = time.monotonic()
            runs = self.look(number)
            task = runs[0] if runs else None
            return task if task is not None and task["status"] in ("completed", "failed", "cancelled") else None
        return wait_until(ended, 600, 0.05, f"the task of issue #{number}")

    def phase(self, model: AnthropicServer, name: str, tasks: int, rate: float | None,
              before_each: Any = None) -> dict:
        """`tasks` assignments, one at a time (rate None; `before_each()` runs before each) or `rate` per second."""
        log(f"{name}: {tasks} assignments " + ("one at a time" if rate is None else f"at {rate:.2f}/s"))
        seen = len(model.requests)
        start, t0, looks0 = self.usage(), time.monotonic(), len(self.looks_cpu)
        paused: tuple[float, ...] = (0.0, 0.0, 0.0)  # (what ran while `before_each()` did: nothing of the platform's should)
        assigned: dict[int, float] = {}
        done: dict[int, dict] = {}
        for i in range(tasks):
            if before_each is not None:
                before = self.usage()
                before_each()
                paused = tuple(p + now - b for p, now, b in zip(paused, self.usage(), before))
            due = time.monotonic() + (1 / rate if rate else 0)
            issue = self.server.api("POST", "/api/issues", {"title": f"bench {name} job {i}", "assignee": "claude-bench"})
            assigned[issue["number"]] = time.time()
            if rate is None:
                done[issue["number"]] = self._wait(model, issue["number"])
            else:
                time.sleep(max(0.0, due - time.monotonic()))
        for number in assigned:
            if number not in done:
                done[number] = self._wait(model, number)
        wall = time.monotonic() - t0
        asking = self.looks_since(looks0)
        cpu, server, daemons = (now - s0 - p for now, s0, p in zip(self.usage(), start, paused))
        cpu -= asking
        split = {"server": (server - asking) / max(1, tasks), "daemons": daemons / max(1, tasks)}
        split["their_processes"] = cpu / max(1, tasks) - split["server"] - split["daemons"]
        first_request: dict[int, float] = {}
        for r in model.requests[seen:]:
            m = _ISSUE.search(r.text) if r.turn == "tool" else None
            if m and int(m.group(1)) in assigned:
                first_request.setdefault(int(m.group(1)), r.at)
        to_first = [first_request[n] - assigned[n] for n in assigned if n in first_request]
        result_to_done = []
        for task in done.values():
            logs = list(self.root.glob(f"ws-*/*/{task['id']}/logs/claude.stream.jsonl"))
            if task["status"] == "completed" and logs:
                finished = datetime.fromisoformat(task["finished_at"].replace("Z", "+00:00")).timestamp()
                result_to_done.append(finished - logs[0].stat().st_mtime)
        failed = [t["failure_reason"] for t in done.values() if t["status"] != "completed"]
        return {"tasks": tasks, "rate_per_s": rate, "completed": tasks - len(failed), "failed": len(failed),
                "failure_reasons": sorted(set(map(str, failed)))[:3],
                "assignment_to_first_model_request": _ms(to_first),
                "cli_result_to_task_completed": _ms(result_to_done),
                "cpu_s_per_task": round(cpu / max(1, tasks), 3), "wall_s": round(wall, 1),
                # where it went: the server, the daemons' own processes, and everything they
                # started (the agent CLI in its sandbox, its MCP front and hooks, git, agents-room);
                # the bench's own looks at the task are not in it (`bench_looks_cpu_s_per_task`)
                "cpu_s_per_task_split": {k: round(v, 3) for k, v in split.items()},
                "bench_looks_cpu_s_per_task": round(asking / max(1, tasks), 4),
                "cpu_busy_fraction_of_cores": round(cpu / wall / (os.cpu_count() or 1), 2),
                "loadavg_1_5_15": _loadavg(), "_to_first": to_first}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=50, help="tasks of the load phase")
    ap.add_argument("--sequential", type=int, default=10, help="tasks of the one-at-a-time phase")
    ap.add_argument("--daemons", type=int, default=4)
    ap.add_argument("--max-tasks", type=int, default=4)
    ap.add_argument("--rate", type=float, default=None,
                    help="assignments per second in the load phase (default: what half the cores serve)")
    ap.add_argument("--bare", type=int, default=10, help="bare `claude -p` runs for the lower bound")
    ap.add_argument("--bare-load", type=int, default=25,
                    help="bare `claude -p` runs at the load phase's rate, its lower bound")
    ap.add_argument("--harness-call", action="store_true",
                    help="a task's agent calls the harness tool harness_state first, as its prompt asks "
                         "(a bare run, which has no such tool, runs its shell command)")
    args = ap.parse_args()
    if CLAUDE.path() is None:
        sys.exit("the pinned Claude Code is not installed: run `make test` once (npm ci in tests/realcli)")

    model_server = _HarnessCalling(command="true", answer="ok") if args.harness_call else \
        AnthropicServer(command="true", answer="ok")
    with tempdir("pxbench-realcli-") as root, model_server as model:
        env = CLAUDE.environment(root / "cli-home", model)
        # What a task's agent has (the daemons are started with this shell's environment; the
        # adapter leaves out what it scrubs): see the module doc.
        bare_env = {**{k: v for k, v in os.environ.items() if k != "CLAUDECODE" and not k.startswith("PREDICTORX_")
                       and not k.endswith("DATABASE_URL")}, **env}
        (root / "bare").mkdir()
        log("bare claude -p runs, one at a time")
        load_before = _loadavg()
        bare, bare_cpu = bare_starts(bare_env, model, root / "bare", args.bare)
        log("bare claude -p runs with the two MCP servers of a task's run, one at a time")
        bare_mcp, _ = bare_starts(bare_env, model, root / "bare", args.bare,
                                  tuple(mcp_servers_args(bare_env, root / "bare")))
        platform = Platform(root, env, args.daemons, args.max_tasks)
        try:
            # Each platform task right after a bare run, so both see the same load (a shared
            # machine's load moves within a minute); the bare lower bound is all bare runs.
            paired: list[float] = []
            paired_cpu: list[float] = []

            def bare_run() -> None:
                xs, cpu = bare_starts(bare_env, model, root / "bare", 1)
                paired.extend(xs)
                paired_cpu.append(cpu)
            seq = platform.phase(model, "sequential", args.sequential, None, before_each=bare_run)
            bare += paired
            paired_bare_cpu = sum(paired_cpu) / max(1, len(paired_cpu))
            bare_cpu = (bare_cpu * args.bare + sum(paired_cpu)) / max(1, args.bare + len(paired_cpu))
            load_bare = _loadavg()
            cores = os.cpu_count() or 1
            rate = args.rate or round(0.5 * cores / max(seq["cpu_s_per_task"], 0.05), 2)
            rate_how = "given (--rate)" if args.rate else \
                f"0.5 × {cores} cores / {seq['cpu_s_per_task']} CPU s per task (sequential phase)"
            load = platform.phase(model, "load", args.tasks, rate)
            load["rate_chosen"] = rate_how
            log(f"bare claude -p runs at {rate:.2f}/s, overlapping as the load phase's tasks did")
            bare_load = bare_at_rate(bare_env, model, root / "bare", args.bare_load, rate)
            bare_load_avg = _loadavg()
        finally:
            platform.stop()

    bare_p50 = percentile(sorted(bare), 50)

    def ratio(phase: dict, lower: list[float]) -> float | None:
        xs = phase.pop("_to_first")
        return round(percentile(sorted(xs), 50) / percentile(sorted(lower), 50), 2) if xs and lower else None

    # sequential: against the bare runs made right before each of its tasks
    to_first = list(load["_to_first"])
    seq["ratio_p50"], load["ratio_p50_vs_idle_bare"] = ratio(seq, paired or bare), ratio(load, bare)
    load["_to_first"] = to_first
    load["ratio_p50"] = ratio(load, bare_load)  # against bare runs at the same rate (its lower bound)
    emit({
        "bench": "realcli",
        "cli": f"claude {subprocess.run([str(CLAUDE.path()), '--version'], capture_output=True, text=True, timeout=30).stdout.strip()}",
        "database": "sqlite", "daemons": args.daemons, "max_tasks_per_daemon": args.max_tasks,
        "task_calls_harness_state": args.harness_call,
        "bare_claude_start_to_first_model_request": {**_ms(bare), "cpu_s_per_run": round(bare_cpu, 3),
                                                      "loadavg_1_5_15": load_bare},
        "bare_paired_with_sequential": {**_ms(paired), "cpu_s_per_run": round(paired_bare_cpu, 3)},
        "bare_with_mcp_servers": _ms(bare_mcp),
        "mcp_floor_ms": round((percentile(sorted(bare_mcp), 50) - bare_p50) * 1000, 1) if bare_mcp and bare else None,
        "bare_at_load_rate": {**_ms(bare_load), "rate_per_s": rate, "loadavg_1_5_15": bare_load_avg},
        "sequential": seq, "load": load,
        # issue 30: one task's CPU (sequential phase: server, daemons, their agents and helpers) over
        # one bare run's (the bare runs of both kinds, one at a time)
        "cpu_task_over_bare": round(seq["cpu_s_per_task"] / bare_cpu, 3) if bare_cpu else None,
        "target_cpu_task_over_bare": TARGET_CPU_TASK_OVER_BARE,
        # beside it, against only the bare runs made right before each task (the same load)
        "cpu_task_over_paired_bare": round(seq["cpu_s_per_task"] / paired_bare_cpu, 3) if paired_bare_cpu else None,
        # the headline figures: the load phase at a rate this machine serves
        "assignment_to_first_model_request": load["assignment_to_first_model_request"],
        "ratio_p50": load["ratio_p50"], "target_ratio_p50": TARGET_RATIO_P50,
        "cli_result_to_task_completed": load["cli_result_to_task_completed"],
        "target_result_to_completed_p95_ms": TARGET_RESULT_TO_DONE_P95_MS,
        "loadavg_before": load_before, "machine": machine(),
    })


if __name__ == "__main__":
    main()
