"""Issue 23, item 8: what one start of a server and of a daemon costs in CPU — the end-to-end
tests start one of each per test (`make test` ~150 of them), and a person's `predictorx up` both.

Each run starts `python -m predictorx server start` on a copy of a migrated SQLite database (as the
tests do), waits until it answers, then `daemon start --foreground` with the fake agent CLIs of
tests/fakes on PATH, until it holds its push connection. CPU is user + system of each process and of
the children it waited for (the daemon's probes of the agent CLIs), read when it is ready; the
harness's own CPU while it waited (its polls) is reported apart.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import DaemonProcess, Server, emit, log, machine, summary_ms, tempdir

FAKES = Path(__file__).resolve().parents[1] / "tests" / "fakes"


def cpu_of(pid: int) -> float:
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="starts of each (default 10)")
    args = parser.parse_args()
    from predictorx.store.db import Database

    server_cpu, daemon_cpu, harness_cpu, server_wall, daemon_wall = [], [], [], [], []
    with tempdir("px-bench-start-") as root:
        template = root / "template.db"
        db = Database(f"sqlite:///{template}")
        db.migrate()
        db.dispose()
        for i in range(args.runs + 1):  # the first warms the page cache and the bytecode: not counted
            run = root / f"run{i}"
            run.mkdir()
            shutil.copyfile(template, run / "px.db")
            t0, h0 = time.monotonic(), time.process_time()
            server = Server(run, f"sqlite:///{run / 'px.db'}")
            t1, h1 = time.monotonic(), time.process_time()
            try:
                s_cpu = cpu_of(server.proc.pid)
                daemon = DaemonProcess(server, run / "daemon-home", env={
                    "PATH": f"{FAKES}{os.pathsep}{os.environ.get('PATH', '')}", "PREDICTORX_WORKSPACES_ROOT": str(run)})
                t2 = time.monotonic()
                try:
                    d_cpu = cpu_of(daemon.proc.pid)
                finally:
                    daemon.stop()
            finally:
                server.stop()
            if i:
                server_cpu.append(s_cpu)
                daemon_cpu.append(d_cpu)
                harness_cpu.append(h1 - h0)
                server_wall.append(t1 - t0)
                daemon_wall.append(t2 - t1)
            log(f"run {i}: server {s_cpu:.2f} CPU-s in {t1 - t0:.2f} s, daemon {d_cpu:.2f} CPU-s in {t2 - t1:.2f} s")
    emit({"bench": "start_cost", "runs": args.runs,
          "server_start_cpu": summary_ms(server_cpu), "daemon_start_cpu": summary_ms(daemon_cpu),
          "harness_wait_cpu_during_server_start": summary_ms(harness_cpu),
          "server_start_wall": summary_ms(server_wall), "daemon_start_wall": summary_ms(daemon_wall),
          "machine": machine()})


if __name__ == "__main__":
    main()
