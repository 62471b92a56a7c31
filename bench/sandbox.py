"""Issue 8: what the sandbox and the descendant sweep cost per agent run; prints one JSON object.

- `start_ms`: from spawn to exit of `true`, plain and under the bubblewrap sandbox of a real
  task (the same mounts `daemon/sandbox.py` makes), median and p90 of N runs;
- `sweep_ms`: `Descendants.end()` after an agent that left nothing (the common case) and after one
  that left a `setsid` child ignoring SIGTERM, in a process that is a child subreaper like the daemon.

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
from pathlib import Path

from predictorx import hardening
from predictorx.agents.descendants import TAG_VAR, Descendants, new_tag
from predictorx.daemon import sandbox

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile  # (the benches' one percentile)


def _pct(values: list[float], q: float) -> float:
    return round(percentile(sorted(values), q * 100), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    problem = sandbox.bwrap_problem()
    if problem:
        print(json.dumps({"error": problem}))
        sys.exit(1)
    hardening.child_subreaper()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "workdir"
        work.mkdir()
        plan = sandbox.SandboxPlan(bwrap=sandbox.bwrap_executable(), provider="command", writable=[work],
                                   readable=[Path(tmp), *sandbox.python_paths()],
                                   hidden=sandbox.secret_paths(Path.home()), chdir=work)
        env = dict(os.environ)
        result: dict = {"runs": args.runs, "processes_on_machine": len([p for p in os.listdir("/proc") if p.isdigit()])}
        for name, argv in (("plain", ["true"]), ("sandboxed", plan(["true"], env))):
            times = []
            for _ in range(args.runs):
                t = time.perf_counter()
                subprocess.run(argv, env=env, check=True, timeout=30)
                times.append((time.perf_counter() - t) * 1000)
            result[f"start_ms_{name}"] = {"p50": _pct(times, 0.5), "p90": _pct(times, 0.9)}
        for name, script in (("nothing_left", "exit 0"),
                             ("setsid_child_left", "setsid sh -c 'trap \"\" TERM; sleep 60' </dev/null >/dev/null 2>&1 &")):
            times = []
            for _ in range(max(3, args.runs // 5)):
                tag = new_tag()
                proc = subprocess.Popen(["sh", "-c", script], env={**env, TAG_VAR: tag}, start_new_session=True)
                family = Descendants(proc.pid, tag)
                proc.wait(30)
                time.sleep(0.05)
                t = time.perf_counter()
                family.end()
                times.append((time.perf_counter() - t) * 1000)
            result[f"sweep_ms_{name}"] = {"p50": _pct(times, 0.5), "p90": _pct(times, 0.9)}
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
