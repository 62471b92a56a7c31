"""What a daemon and its server cost per minute while nothing happens (issue 30): first with no
task, then while one task's agent only sleeps (what a run costs while its agent waits on its model).

A real server (SQLite, the default daemon timeout, so the heartbeat interval the server asks for)
and one `predictorx daemon start --foreground`; an unconfined `command` agent that sleeps. CPU
two ways: `cpu_ms` from /proc/<pid>/stat (every thread, those that ended too, in clock ticks of
10 ms) and `run_ms` from /proc/<pid>/task/*/schedstat (nanoseconds, but only threads alive at both
ends: right for the daemon, whose pool threads live on, not for the server, whose worker threads
come and go). An idle daemon uses a few ms a minute, which ticks alone cannot tell apart.
Printed per phase, per minute: each process's CPU ms and its wake-ups (voluntary context switches
of its live threads).

Usage: .venv/bin/python bench/daemon_idle.py [--seconds 60]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Daemon, Server, emit, log, machine, sqlite_url, tempdir, wait_until

#: what the sandbox would add to the agent is not this bench's subject
UNCONFINED = {"sandbox": False}


def _threads(pid: int) -> list[Path]:
    try:
        return list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return []


def run_ns(pid: int) -> int:
    """Nanoseconds this process's threads have run (exited threads' time is lost: the daemon's
    pool threads live on)."""
    total = 0
    for t in _threads(pid):
        try:
            total += int((t / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            continue
    return total


def wakeups(pid: int) -> int:
    total = 0
    for t in _threads(pid):
        try:
            for line in (t / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            continue
    return total


def ticks_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(pids: dict[str, int], seconds: float) -> dict[str, float]:
    before = {k: (run_ns(p), wakeups(p), ticks_s(p)) for k, p in pids.items()}
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(left)  # the measurement window itself
    out: dict[str, float] = {}
    for k, p in pids.items():
        ns, wake = run_ns(p) - before[k][0], wakeups(p) - before[k][1]
        out[f"{k}_cpu_ms_per_minute"] = round((ticks_s(p) - before[k][2]) * 1000 * 60 / seconds, 1)
        out[f"{k}_run_ms_per_minute"] = round(ns / 1e6 * 60 / seconds, 2)
        out[f"{k}_wakeups_per_minute"] = round(wake * 60 / seconds, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="length of each phase")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    with tempdir("pxbench-idle-") as root:
        server = Server(root, sqlite_url(root))
        daemon = None
        try:
            daemon = Daemon(server, root / "daemon")
            pids = {"daemon": daemon.proc.pid, "server": server.proc.pid}
            time.sleep(2)  # the registration's and first claim's own work settles (not measured)
            log(f"idle daemon, {args.seconds:.0f} s")
            idle = measure(pids, args.seconds)
            started = root / "agent-started"
            server.api("POST", "/api/agents", {**UNCONFINED, "name": "sleeper", "provider": "command",
                                               "command": ["sh", "-c", f"touch {started}; exec sleep 3600"]})
            issue = server.api("POST", "/api/issues", {"title": "Think for a while", "assignee": "sleeper"})
            wait_until(started.exists, 60, 0.05, "the agent to start")
            task_id = server.api("GET", f"/api/issues/{issue['number']}/runs")[0]["id"]
            wait_until(lambda: server.api("GET", f"/api/tasks/{task_id}")["status"] == "running", 30, 0.1,
                       "the task to be reported running")
            time.sleep(2)  # its start's messages go up (not measured)
            log(f"one sleeping agent, {args.seconds:.0f} s")
            sleeping = measure(pids, args.seconds)
            server.api("POST", f"/api/tasks/{task_id}/cancel")
        finally:
            if daemon is not None:
                daemon.stop()
            server.stop()
    emit({"bench": "daemon_idle", "machine": machine(), "seconds": args.seconds,
          "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
          "idle": idle, "one_sleeping_agent": sleeping})


if __name__ == "__main__":
    main()
