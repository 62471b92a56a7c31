"""What the sandbox costs per agent run (issues 8 and 29); prints one JSON object.

One function per measurement, each returning its part of the result (`MEASUREMENTS` lists them;
a new one is one more function there):

- `start`: from spawn to exit of `true`, plain and under the sandbox of a real task (the mounts
  `daemon/sandbox.py` makes, its user namespace, seccomp filter and a Claude Code config copy),
  p50/p90 of N runs, and the p50 the sandbox adds (target ≤ 100 ms);
- `probe`: `bwrap_problem()`, the check a run makes before it starts sandboxed;
- `config_copy`: `cliconfig.prepare` of a Claude Code config dir like a person's (settings, login,
  a few hundred small files of plugins and commands; their sessions are not copied), p50/p90;
- `sweep`: `Descendants.end()` after an agent that left nothing and after one that left a `setsid`
  child ignoring SIGTERM, in a process that is a child subreaper like the daemon.

Run: .venv/bin/python bench/sandbox.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from predictorx import hardening
from predictorx.agents.descendants import TAG_VAR, Descendants, new_tag
from predictorx.daemon import cliconfig, sandbox

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile  # (the benches' one percentile)


def _pct(values: list[float], q: float) -> float:
    return round(percentile(sorted(values), q * 100), 2)


def _timed_ms(action: Callable[[], Any], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        action()
        times.append((time.perf_counter() - t) * 1000)
    return times


def _person_claude_home(home: Path) -> None:
    """A Claude Code config dir as a person has it: settings, login, state, plugins and commands,
    and sessions (which the copy leaves out)."""
    claude = home / ".claude"
    for sub, count in (("plugins/marketplace", 300), ("commands", 20), ("agents", 10), ("projects/-home-me-repo", 50)):
        (claude / sub).mkdir(parents=True)
        for i in range(count):
            (claude / sub / f"f{i}.md").write_text("x" * 2000)
    (claude / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash(git:*)"]}}))
    (claude / ".credentials.json").write_text(json.dumps({"claudeAiOauth": {"accessToken": "t" * 100}}))
    (home / ".claude.json").write_text(json.dumps({"numStartups": 40, "projects": {f"/p{i}": {} for i in range(50)}}))


def start(tmp: Path, runs: int) -> dict[str, Any]:
    home, work = tmp / "home", tmp / "workdir"
    work.mkdir()
    _person_claude_home(home)
    overlays = cliconfig.prepare("claude", home, {}, tmp / "env" / cliconfig.COPY_DIR, tmp / "sessions")
    plan = sandbox.SandboxPlan(bwrap=sandbox.bwrap_executable(), provider="claude", writable=[work],
                               readable=[tmp / "env", *sandbox.python_paths()], hidden=sandbox.secret_paths(home),
                               home=home, chdir=work, seccomp=sandbox.write_filter(tmp), overlays=overlays)
    env = dict(os.environ)
    result: dict[str, Any] = {}
    for name, argv in (("plain", ["true"]), ("sandboxed", plan(["true"], env))):
        times = _timed_ms(lambda argv=argv: subprocess.run(argv, env=env, check=True, timeout=30), runs)
        result[name] = {"p50": _pct(times, 0.5), "p90": _pct(times, 0.9)}
    result["added_p50"] = round(result["sandboxed"]["p50"] - result["plain"]["p50"], 2)
    return result


def probe(tmp: Path, runs: int) -> dict[str, Any]:
    times = _timed_ms(sandbox.bwrap_problem, max(5, runs // 2))
    return {"p50": _pct(times, 0.5), "p90": _pct(times, 0.9)}


def config_copy(tmp: Path, runs: int) -> dict[str, Any]:
    home = tmp / "home"
    _person_claude_home(home)
    counter = iter(range(10**6))
    times = _timed_ms(lambda: cliconfig.prepare("claude", home, {}, tmp / f"run{next(counter)}", tmp / "sessions"),
                      runs)
    copied = sum(1 for p in (tmp / "run0").rglob("*") if p.is_file())
    return {"p50": _pct(times, 0.5), "p90": _pct(times, 0.9), "files_copied": copied}


def sweep(tmp: Path, runs: int) -> dict[str, Any]:
    env = dict(os.environ)
    result: dict[str, Any] = {}
    for name, script in (("nothing_left", "exit 0"),
                         ("setsid_child_left", "setsid sh -c 'trap \"\" TERM; sleep 60' </dev/null >/dev/null 2>&1 &")):
        times = []
        for _ in range(max(3, runs // 5)):
            tag = new_tag()
            proc = subprocess.Popen(["sh", "-c", script], env={**env, TAG_VAR: tag}, start_new_session=True)
            family = Descendants(proc.pid, tag)
            proc.wait(30)
            time.sleep(0.05)  # a bench, not a test: the setsid child has started by then
            t = time.perf_counter()
            family.end()
            times.append((time.perf_counter() - t) * 1000)
        result[name] = {"p50": _pct(times, 0.5), "p90": _pct(times, 0.9)}
    return result


def network_proxy(tmp: Path, runs: int) -> dict[str, Any]:
    """The allowlist's added latency per model request (bench/netproxy.py, `runs` × 10 requests):
    a new connection and a kept-alive one, sandboxed client, allowlist minus open network."""
    import asyncio

    from netproxy import run as netproxy_run  # bench/netproxy.py, beside this script

    found = asyncio.run(netproxy_run(max(50, runs * 10), 50))
    return {kind: found[f"{kind}_connection_ms"]["added"] for kind in ("fresh", "kept")}


#: name → measurement(temporary dir of its own, runs) → its part of the JSON object (in ms).
MEASUREMENTS: dict[str, Callable[[Path, int], dict[str, Any]]] = {
    "start_ms": start, "probe_ms": probe, "config_copy_ms": config_copy, "sweep_ms": sweep,
    "network_proxy_added_ms": network_proxy,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--only", action="append", choices=sorted(MEASUREMENTS), help="Run only these (repeatable).")
    args = ap.parse_args()
    problem = sandbox.bwrap_problem()
    if problem:
        print(json.dumps({"error": problem}))
        sys.exit(1)
    hardening.child_subreaper()
    result: dict[str, Any] = {"runs": args.runs, "load_average_before": [round(x, 2) for x in os.getloadavg()],
                              "processes_on_machine": len([p for p in os.listdir("/proc") if p.isdigit()])}
    for name, measure in MEASUREMENTS.items():
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            result[name] = measure(Path(tmp), args.runs)
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
