"""Issue 23, item 9: how long the `predictorx` command takes, start to exit, against a bare
interpreter of the same venv: `predictorx version`, a command that makes one request
(`issue list --output json` against a real server on SQLite), the same with a table, and `--help`.

Each is run `--runs` times, interleaved (a busy moment hits every kind alike); wall times p50/p90.
Targets: `version` p50 ≤ 80 ms, one request ≤ 120 ms.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import PYTHON, Server, emit, log, machine, summary_ms, tempdir

PREDICTORX = str(Path(PYTHON).with_name("predictorx"))


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-500:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40, help="runs of each command (default 40)")
    args = parser.parse_args()
    with tempdir("px-bench-cli-") as root:
        server = Server(root, f"sqlite:///{root / 'px.db'}")
        try:
            server.api("POST", "/api/issues", {"title": "one issue to list"})
            env = {**os.environ, "PREDICTORX_HOME": str(server.home), "PYTHONDONTWRITEBYTECODE": ""}
            kinds = {
                "bare_python": [PYTHON, "-c", "pass"],
                "version": [PREDICTORX, "version"],
                "one_request_json": [PREDICTORX, "issue", "list", "--output", "json"],
                "one_request_table": [PREDICTORX, "issue", "list"],
                "help": [PREDICTORX, "--help"],
            }
            for argv in kinds.values():  # warm the page cache and the bytecode once
                timed(argv, env)
            times: dict[str, list[float]] = {k: [] for k in kinds}
            log(f"{args.runs} runs of each of {len(kinds)} commands")
            for _ in range(args.runs):
                for kind, argv in kinds.items():
                    times[kind].append(timed(argv, env))
        finally:
            server.stop()
    result = {k: summary_ms(v) for k, v in times.items()}
    bare = result["bare_python"]["p50_ms"]
    emit({"bench": "cli_start", "runs": args.runs, **result,
          "version_over_bare_p50": round(result["version"]["p50_ms"] / bare, 1),
          "one_request_over_bare_p50": round(result["one_request_json"]["p50_ms"] / bare, 1),
          "targets": {"version_p50_ms": 80, "one_request_p50_ms": 120}, "machine": machine()})


if __name__ == "__main__":
    main()
