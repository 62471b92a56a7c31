"""Run every bench and write one Markdown table: each figure beside its target and its lower bound.

The benches: api, claim, classify, daemon_rss, dispatch, fanout, harness, load, netproxy, overhead, realcli, room,
sandbox, wake, web, worktree (each `bench/<name>.py`, one JSON object on stdout). The lower bound is what the figure
cannot beat on this machine, measured in the same run where the bench measures one (same-replica
wake for cross-replica wake, the agent program's own start-up for dispatch, a bare `claude -p` for
the real CLI, a bare Python start for the room's hooks, `git worktree add` for a worktree's
preparation, the fastest request for latencies), or the ideal (0 errors). The load average at each
bench's end is in its row: on a shared machine the figures move with it.

A bench that cannot run here (no PostgreSQL, nginx, locust, Chromium, bubblewrap or real CLI)
fails with its reason on stderr; its rows say "not measured" and the others still run.

Usage:
  .venv/bin/python bench/report.py                  # run all (tens of minutes), print the table
  .venv/bin/python bench/report.py --only claim wake --out report.md
  .venv/bin/python bench/report.py --smoke          # each bench with small sizes: checks they run, not figures
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

#: bench → extra arguments for a full run (its defaults are the measured sizes)
BENCHES: dict[str, list[str]] = {
    "api": [], "claim": [], "cli_start": [], "daemon_rss": [], "dispatch": [], "fanout": [], "harness": [], "load": [],
    "netproxy": [], "overhead": [], "pagestall": [], "realcli": [], "room": [], "sandbox": [], "wake": [], "web": [],
    "worktree": [], "forge_loop": [], "classify": [],
}
#: bench → arguments for --smoke: small sizes that exercise every part of the bench in seconds
SMOKE: dict[str, list[str]] = {
    "api": ["--projects", "20", "--list-seconds", "1"],
    "claim": ["--tasks", "100"],
    "cli_start": ["--runs", "2"],
    "daemon_rss": ["--idle", "1"],
    "dispatch": ["--tasks", "10", "--rate", "10", "--daemons", "2"],
    "fanout": ["--people", "3", "--tasks", "10", "--rate", "10"],
    "harness": ["--loop", "100", "--db-loop", "100", "--chain", "10", "--qaqc", "200"],
    "load": ["--users", "10", "--seconds", "5"],
    "netproxy": ["--requests", "20"],
    "overhead": ["--concurrency", "1", "--stream-seconds", "3", "--idle-seconds", "1"],
    "realcli": ["--tasks", "2", "--sequential", "1", "--daemons", "1", "--bare", "1", "--bare-load", "1"],
    "room": ["--scale", "0.01"],
    "sandbox": ["--runs", "3"],
    "wake": ["--samples", "10", "--rate", "10"],
    "web": ["--messages", "200", "--issues", "50", "--repeat", "1"],
    "worktree": ["--scale", "0.02"],
    "pagestall": ["--seconds", "3", "--clients", "2"],
    "forge_loop": ["--followups", "2", "--runs", "2"],
    "classify": ["--rounds", "2"],
}
TIMEOUT_S = 3600


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
        v = round(v, 1) if abs(v) >= 10 else round(v, 2) if abs(v) >= 1 else round(v, 3)
    return f"{v}{unit}"


def _ok(value: Any, check: Callable[[Any], bool]) -> str:
    if value is None:
        return "not measured"
    try:
        return "yes" if check(value) else "**no**"
    except TypeError:
        return "—"


def rows(results: dict[str, dict], wanted: set[str] | None = None) -> list[tuple[str, str, str, str, str, str]]:
    """(figure, value, target, meets, lower bound, load average); only the `wanted` benches' rows."""
    out = []

    def add(bench: str, figure: str, value: Any, unit: str, target: str, check: Callable[[Any], bool],
            lower: Any = None, lower_unit: str = "") -> None:
        if wanted is not None and bench not in wanted:
            return
        load = _load(results.get(bench))
        out.append((figure, _fmt(value, unit), target, _ok(value, check),
                    _fmt(lower, lower_unit) if not isinstance(lower, str) else lower,
                    ", ".join(str(round(x, 2)) for x in load) if load else "—"))

    claim = results.get("claim")
    for backend in ("postgres", "sqlite"):
        b = _get(claim, "backends", lambda x, b=backend: x.get("backend") == b)
        for limit in (1, 8):
            run = _get(b, "runs", lambda x, n=limit: x.get("limit") == n)
            add("claim", f"claims/s, {backend}, 8 claimers, claim limit {limit}", _get(run, "claims_per_s"), "/s",
                "≥ 200/s", lambda v: v >= 200, "—")
            add("claim", f"double claims, {backend}, limit {limit} ({_fmt(_get(run, 'tasks_claimed'))} claimed)",
                _get(run, "double_claims"), "", "0", lambda v: v == 0, 0)
            add("claim", f"server CPU per claim + finish, {backend}, limit {limit}",
                _get(run, "server_cpu_ms_per_claimed_task"), " ms", "≤ 3 ms", lambda v: v <= 3,
                _get(run, "claim_requests", "min_ms"), " ms fastest claim request")
    wake = results.get("wake")
    add("wake", "cross-replica wake p50 (NOTIFY/LISTEN)", _get(wake, "cross_replica", "p50_ms"), " ms", "≤ 100 ms",
        lambda v: v <= 100, _get(wake, "same_replica_lower_bound", "p50_ms"), " ms same replica")
    add("wake", "cross-replica wake p99", _get(wake, "cross_replica", "p99_ms"), " ms", "reported",
        lambda v: True, _get(wake, "same_replica_lower_bound", "p99_ms"), " ms same replica")
    stall = results.get("pagestall")
    for backend in ("sqlite", "postgres"):
        run = _get(stall, "runs", backend)
        add("pagestall", f"/api/health p99 while 6 clients hammer a heavy issue page, {backend}",
            _get(run, "health", "p99_ms"), " ms", "≤ 100 ms", lambda v: v <= 100,
            _get(run, "health", "p50_ms"), " ms p50")
        add("pagestall", f"heartbeat p99 meanwhile (task {_get(run, 'task_status') or '—'}), {backend}",
            _get(run, "heartbeat", "p99_ms"), " ms", f"< {_get(stall, 'daemon_timeout_s') or 10} s, task running",
            lambda v, r=run: v < 1000 * ((_get(stall, "daemon_timeout_s") or 10)) and _get(r, "task_status") == "running")
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
    fan = results.get("fanout")
    people = _fmt(_get(fan, "people_with_a_daemon"))
    add("fanout", f"claim requests per queued task, {people} people's daemons connected",
        _get(fan, "claim_requests_per_task"), "", "≤ 2 (the owner's daemon: its claim, its last look)",
        lambda v: v <= 2, _get(fan, "empty_claims_per_task"), " of them empty")
    add("fanout", f"events written to daemon streams per queued task, {people} daemons",
        _get(fan, "daemon_stream_events_per_task"), "", "reported", lambda v: True, 1, " (its owner's daemon)")
    add("fanout", f"server CPU per queued task (assign, claim, running, finish), {people} daemons",
        _get(fan, "server_cpu_ms_per_task"), " ms", "reported", lambda v: True, "—")
    add("fanout", "assign → held by its owner's daemon, p99", _get(fan, "assign_returned_to_held_by_owners_daemon", "p99_ms"),
        " ms", "reported", lambda v: True, _get(fan, "assign_returned_to_held_by_owners_daemon", "p50_ms"), " ms p50")
    load = results.get("load")
    for key, label in (("replicas", "2 replicas behind nginx, PostgreSQL"), ("up_sqlite", "1 `up`, SQLite")):
        part = _get(load, key)
        users = _get(part, "users")
        add("load", f"load, {_fmt(users)} users × {_fmt(_get(part, 'seconds'))} s, {label}: errors", _get(part, "failures"), "",
            "0", lambda v: v == 0, 0, "")
        add("load", f"load, {label}: p99 ({_fmt(_get(part, 'requests_per_s'))} req/s)", _get(part, "p99_ms"), " ms",
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
    cli = results.get("cli_start")
    add("cli_start", "`predictorx version`, start to exit, p50", _get(cli, "version", "p50_ms"), " ms", "≤ 80 ms",
        lambda v: v <= 80, _get(cli, "bare_python", "p50_ms"), " ms bare python")
    add("cli_start", "`predictorx issue list --output json` (one request), p50", _get(cli, "one_request_json", "p50_ms"),
        " ms", "≤ 120 ms", lambda v: v <= 120, _get(cli, "bare_python", "p50_ms"), " ms bare python")
    forge = results.get("forge_loop")
    add("forge_loop", "webhook → follow-up's agent started, p50", _get(forge, "webhook_to_followup_agent_started", "p50_ms"),
        " ms", "≤ 1000 ms", lambda v: v <= 1000, _get(forge, "webhook_to_followup_agent_started", "p99_ms"), " ms p99")
    add("forge_loop", "run ended → PR opened (with push) ÷ bare git push, p50",
        _get(forge, "pr_opened_over_bare_push_p50", "ratio"), "×", "≤ 1.5×", lambda v: v <= 1.5,
        _get(forge, "bare_git_push_same_branch", "p50_ms"), " ms bare push")
    _harness_rows(results.get("harness"), add)
    _classify_rows(results.get("classify"), add)
    _realcli_rows(results.get("realcli"), add)
    _overhead_rows(results.get("overhead"), add)
    _room_rows(results.get("room"), add)
    _sandbox_rows(results.get("sandbox"), add)
    _netproxy_rows(results.get("netproxy"), add)
    _web_rows(results.get("web"), add)
    _worktree_rows(results.get("worktree"), add)
    return out


def _load(r: dict | None) -> list[float] | None:
    """The load average a bench reported at its end (the benches name it differently)."""
    if not r:
        return None
    for path in (("machine", "loadavg_1_5_15"), ("loadavg_1_5_15",), ("load_average",), ("loadavg_1m_at_end",)):
        v = _get(r, *path)
        if v is not None:
            return v if isinstance(v, list) else [v]
    return None


_ANY = (lambda v: True)  # a figure that is reported, with no target to meet


def _harness_rows(h: dict | None, add: Callable[..., None]) -> None:
    loop, chain = _get(h, "engine_loop"), _get(h, "engine_chain", "complete_plus_next")
    add("harness", f"harness: engine loop, {_fmt(_get(loop, 'iterations'))} iterations", _get(loop, "steps_per_s"),
        " steps/s", "reported (completes)", lambda v: bool(_get(loop, "completed"))
        if loop else False, "SpiffWorkflow alone: 650–4,200 steps/s")
    add("harness", f"harness: engine step on a {_fmt(_get(h, 'engine_chain', 'nodes'))}-node process, p99",
        _get(chain, "p99_ms"), " ms", "reported", _ANY, _get(chain, "p50_ms"), " ms p50")
    add("harness", "harness: resume from the database, p50", _get(h, "resume_load_and_deserialise", "p50_ms"),
        " ms", "reported", _ANY, _get(h, "resume_load_and_deserialise", "min_ms"), " ms fastest")
    qaqc = _get(h, "qaqc")
    add("harness", f"harness: `prov qaqc` over {_fmt(_get(qaqc, 'steps'))} steps", _get(qaqc, "seconds"), " s",
        "≤ 2 s (10,000 steps)", lambda v: v <= 2, "—")
    add("harness", "harness: classification p99", _get(h, "classify", "p99_ms"), " ms", "≤ 5 ms",
        lambda v: v <= 5, _get(h, "classify", "p50_ms"), " ms p50")
    add("harness", "harness: task-start sweep, 200 beans, p99", _get(h, "sweep_200_beans", "p99_ms"), " ms",
        "≤ 1 s", lambda v: v <= 1000, _get(h, "sweep_200_beans", "min_ms"), " ms fastest")


def _classify_rows(c: dict | None, add: Callable[..., None]) -> None:
    add("classify", "classification (data table), 50 requests en+ru, per request p99", _get(c, "shipped", "per_request",
        "p99_ms"), " ms", "≤ 5 ms", lambda v: v <= 5, _get(c, "shipped", "per_request_cpu", "p99_ms"), " ms CPU p99")


def _realcli_rows(r: dict | None, add: Callable[..., None]) -> None:
    add("realcli", "real Claude Code: assignment → first model request, p50 ÷ bare start p50 at the same rate "
        "(load phase)", _get(r, "ratio_p50"), "×", "≤ 1.3×", lambda v: v <= 1.3,
        _get(r, "bare_at_load_rate", "p50_ms"), " ms bare `claude -p` p50")
    add("realcli", "real Claude Code: the same, one task at a time, ÷ a bare start just before each",
        _get(r, "sequential", "ratio_p50"), "×", "≤ 1.3×", lambda v: v <= 1.3,
        _get(r, "bare_paired_with_sequential", "p50_ms"), " ms bare `claude -p` p50")
    add("realcli", "real Claude Code: what its own MCP start-up adds to a bare start (the two MCP servers "
        "of a task, no daemon), p50", _get(r, "mcp_floor_ms"), " ms", "— (no target)", lambda v: True,
        _get(r, "bare_with_mcp_servers", "p50_ms"), " ms bare start with them p50")
    add("realcli", "real Claude Code: CLI result → task completed, p95",
        _get(r, "cli_result_to_task_completed", "p95_ms"), " ms", "≤ 1 s", lambda v: v <= 1000,
        _get(r, "cli_result_to_task_completed", "min_ms"), " ms fastest")


def _overhead_rows(r: dict | None, add: Callable[..., None]) -> None:
    stream = f"{_fmt(_get(r, 'stream_seconds'))} s stream"
    add("overhead", f"real Claude Code, slow model ({stream}): daemon CPU per run-minute, worst N of "
        "1/4/8 (whole task)", _get(r, "daemon_cpu_s_per_run_minute_max"), " s", "≤ 0.05 s", lambda v: v <= 0.05,
        _get(r, "idle", "daemon_cpu_s_per_minute"), " s/min idle daemon")
    add("overhead", "real Claude Code, slow model: daemon CPU per run-minute while the CLIs stream, worst N",
        _get(r, "daemon_cpu_s_per_run_minute_while_streaming_max"), " s", "≤ 0.05 s", lambda v: v <= 0.05,
        _get(r, "idle", "daemon_cpu_s_per_minute"), " s/min idle daemon")
    add("overhead", "real Claude Code, slow model: what the platform adds (its per-run processes, daemon, "
        "server) ÷ the CLI's own CPU, N=4", _get(r, "platform_over_cli_at_4"), "×", "≤ 0.2×", lambda v: v <= 0.2,
        _get(r, "by_concurrency", "4", "bare", "per_run", "per_run_cpu_s"), " s the bare run's own children")
    add("overhead", "real Claude Code, slow model: a task's CPU ÷ a bare `claude -p` run's, worst N",
        _get(r, "task_over_bare_max"), "×", "≤ 1.3×", lambda v: v <= 1.3,
        _get(r, "by_concurrency", "4", "bare", "per_run", "total_cpu_s"), " s bare run CPU (N=4)")


def _room_rows(r: dict | None, add: Callable[..., None]) -> None:
    single, multi = _get(r, "msg_send_store_single_process"), _get(r, "msg_send_16_writer_processes")
    add("room", "room: message send, one process, p50", _get(single, "p50_ms"), " ms", "≤ 1 ms",
        lambda v: v <= 1, "—")
    add("room", "room: message send, one process", _get(single, "msg_per_s"), " msg/s", "≥ 1,000/s",
        lambda v: v >= 1000, "—")
    add("room", f"room: 16 writer processes ({_fmt(_get(multi, 'lost'))} lost)", _get(multi, "aggregate_msg_per_s"),
        " msg/s", "≥ 300/s, 0 lost", lambda v: v >= 300 and _get(multi, "lost") == 0, 0, " lost")
    for key, what in (("msg_send_mcp_stdio_round_trip", "send"), ("msg_recv_mcp_stdio_round_trip", "receive")):
        add("room", f"room: MCP (stdio) {what}, p95", _get(r, key, "p95_ms"), " ms", "≤ 15 ms",
            lambda v: v <= 15, _get(r, key, "p50_ms"), " ms p50")
    add("room", "room: lease, 16 contending sessions, p95", _get(r, "lease_acquire_16_contending", "p95_ms"),
        " ms", "≤ 20 ms", lambda v: v <= 20, _get(r, "lease_acquire_16_contending", "p50_ms"), " ms p50")
    hooks = _get(r, "hook_process_time_100k") or {}
    worst = max((v["p95_ms"] for k, v in hooks.items() if isinstance(v, dict) and k != "bare_python"), default=None)
    size = _get(r, "big_store", "messages")
    add("room", f"room: hook process, slowest event p95 ({size} messages stored)", worst, " ms", "≤ 150 ms",
        lambda v: v <= 150, _get(hooks, "bare_python", "p50_ms"), " ms bare Python start")
    add("room", f"room: search over {size} messages, p95", _get(r, "search_100k", "p95_ms"), " ms", "≤ 50 ms",
        lambda v: v <= 50, "—")
    dp = _get(r, "doctor_prune_100k")
    add("room", "room: doctor / prune", None if dp is None else f"{dp['doctor_s']} / {dp['prune_s']}", " s",
        "≤ 1 s / ≤ 2 s", lambda v: dp["doctor_s"] <= 1 and dp["prune_s"] <= 2, "—")
    guard = _get(r, "commit_guard_10k_files")
    add("room", f"room: pre-commit guard, {_fmt(_get(guard, 'files'))} files, p50", _get(guard, "p50_ms"), " ms",
        "≤ 100 ms", lambda v: v <= 100, _get(guard, "python_startup_p50_ms"), " ms Python start")


def _sandbox_rows(r: dict | None, add: Callable[..., None]) -> None:
    add("sandbox", "sandbox: start of `true` in the sandbox, p50", _get(r, "start_ms_sandboxed", "p50"), " ms",
        "≤ 100 ms", lambda v: v <= 100, _get(r, "start_ms_plain", "p50"), " ms plain")
    add("sandbox", "sandbox: end-of-run sweep, nothing left, p50", _get(r, "sweep_ms_nothing_left", "p50"), " ms",
        "≤ 25 ms", lambda v: v <= 25, "—")
    add("sandbox", "sandbox: end-of-run sweep, a setsid child ignoring SIGTERM, p50",
        _get(r, "sweep_ms_setsid_child_left", "p50"), " ms", "reported", _ANY, "—")


def _netproxy_rows(r: dict | None, add: Callable[..., None]) -> None:
    for kind, what in (("fresh_connection_ms", "new connection"), ("kept_connection_ms", "kept-alive connection")):
        add("netproxy", f"network allowlist: added per model request, {what}, p50", _get(r, kind, "added", "p50"),
            " ms", "≤ 2 ms", lambda v: v <= 2, _get(r, kind, "open", "p50"), " ms request with the open network")


def _web_rows(r: dict | None, add: Callable[..., None]) -> None:
    for key, what in (("task_page", f"task page, {_fmt(_get(r, 'messages'))} messages"),
                      ("board", f"board, {_fmt(_get(r, 'issues'))} issues")):
        page = _get(r, key)
        add("web", f"web: {what}: first contentful paint", _get(page, "first_contentful_paint_ms_median"), " ms",
            "≤ 1 s", lambda v: v <= 1000, _get(page, "dom_content_loaded_ms_median"), " ms DOMContentLoaded")
        add("web", f"web: {what}: page weight", _get(page, "weight", "total_bytes"), " bytes", "< 100 KB",
            lambda v: v < 100_000, "—")
    add("web", "web: task page scrolled: frames over 50 ms", _get(r, "task_page", "scroll", "frames_over_50ms"),
        "", "0", lambda v: v == 0, 0)


def _worktree_rows(r: dict | None, add: Callable[..., None]) -> None:
    wt, files = _get(r, "worktree"), _get(r, "repo", "tracked")
    add("worktree", f"worktree: prepare ÷ lower bound ({files} files)", _get(wt, "prepare_vs_lower_bound"), "×",
        "≤ 1.5×", lambda v: v <= 1.5, _get(wt, "lower_bound_s"), " s `git worktree add` + copy")
    add("worktree", "worktree: prepare ÷ `git clone --local`", _get(wt, "prepare_vs_clone"), "×", "≤ 0.5×",
        lambda v: v <= 0.5, _get(wt, "clone_local_s"), " s clone + copy")
    for key, what in (("in_process", "within one process"), ("across_processes", "across two processes")):
        add("worktree", f"worktree: in-place lock handoff {what}, p50", _get(r, "handoff", key, "p50_ms"), " ms",
            "≤ 100 ms", lambda v: v <= 100, "—")


def markdown(results: dict[str, dict], smoke: bool = False, wanted: set[str] | None = None) -> str:
    lines = ["*Smoke run (--smoke): small sizes, to check that every bench runs — not figures to size from.*", ""] \
        if smoke else []
    lines += ["| figure | measured | target | meets | lower bound | load avg 1/5/15 |",
              "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows(results, wanted)]
    return "\n".join(lines) + "\n"


def run_all(names: list[str], keep: Path, smoke: bool = False) -> dict[str, dict]:
    results = {}
    for name in names:
        argv = [sys.executable, str(HERE / f"{name}.py"), *(SMOKE if smoke else BENCHES)[name]]
        print(f"== {' '.join(argv[1:])}", file=sys.stderr, flush=True)
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=HERE.parent)
        except subprocess.TimeoutExpired:
            print(f"bench/{name}.py ran over {TIMEOUT_S} s; its rows say not measured", file=sys.stderr)
            continue
        sys.stderr.write(p.stderr[-3000:])
        try:
            result = json.loads(p.stdout) if p.stdout.strip() else None
        except ValueError:
            result = None
        if p.returncode != 0 or not isinstance(result, dict) or "error" in result:
            why = result.get("error") if isinstance(result, dict) else None
            print(f"bench/{name}.py failed (exit {p.returncode}{': ' + why if why else ''}); its rows say not measured",
                  file=sys.stderr)
            continue
        results[name] = result
        (keep / f"{name}.json").write_text(p.stdout)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", choices=list(BENCHES), help="these benches only")
    ap.add_argument("--smoke", action="store_true",
                    help="each bench with small sizes (SMOKE): checks that it runs; its figures mean little")
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
        results = run_all(names, keep, smoke=args.smoke)
    table = markdown(results, smoke=args.smoke, wanted=set(args.only) if args.only else None)
    if args.out:
        args.out.write_text(table)
    print(table, end="")


if __name__ == "__main__":
    main()
