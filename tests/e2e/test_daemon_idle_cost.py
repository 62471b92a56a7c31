"""Issue 30: an agent waiting on its model costs the daemon what an idle process costs — nothing.

A real server and daemon (default heartbeat); the daemon's own CPU (kernel accounting of the
process, all its threads, not its children) over 30 s with no task, then over 30 s while a task's
agent sleeps. Both phases run in this one test, so a loaded machine slows both alike. The daemon
used to poll every 20 ms per run for its end, scan every /proc/*/stat each second for its
descendants and wake its uploader every 50 ms: about 0.5 s of CPU per 30 s of sleeping agent.
"""

from __future__ import annotations

import sys
import time

import psutil

from .harness import UNCONFINED, Daemon, Server, wait_until

WINDOW_S = 30.0
#: /proc counts CPU in clock ticks (10 ms); an idle daemon measures a few, so the idle figure is
#: taken as at least this much, lest one tick more decide the ratio.
IDLE_FLOOR_S = 0.05


def _cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system  # this process and its threads; not its children


def _cpu_over(pid: int, seconds: float) -> float:
    before, end = _cpu(pid), time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(left)  # a measurement window, not a synchronisation
    return _cpu(pid) - before


def test_a_sleeping_agent_costs_the_daemon_no_more_than_being_idle(tmp_path):
    server = Server(tmp_path / "server-home", f"sqlite:///{tmp_path / 'px.db'}", PREDICTORX_DAEMON_TIMEOUT="30")
    daemon = None
    try:
        daemon = Daemon(server, tmp_path / "daemon-home", PREDICTORX_HEARTBEAT_INTERVAL="5",
                        PREDICTORX_POLL_INTERVAL="3")
        pid = daemon.proc.pid
        started = tmp_path / "agent-started"
        server.api("POST", "/api/agents", {**UNCONFINED, "name": "sleeper", "provider": "command",
                                           "command": ["sh", "-c", f"touch {started}; exec sleep 600"]})
        idle = _cpu_over(pid, WINDOW_S)

        issue = server.api("POST", "/api/issues", {"title": "Think for a while", "assignee": "sleeper"})
        wait_until(started.exists, 60, 0.05, "the agent to start")
        task_id = server.runs(issue["number"])[0]["id"]
        # The start's own work (the running report, the first messages) is done before the window.
        wait_until(lambda: server.api("GET", f"/api/tasks/{task_id}")["status"] == "running", 30, 0.1,
                   "the task to be reported running")
        busy = _cpu_over(pid, WINDOW_S)
        assert server.api("GET", f"/api/tasks/{task_id}")["status"] == "running"

        print(f"daemon CPU over {WINDOW_S:.0f} s: idle {idle:.3f} s, one sleeping agent {busy:.3f} s",
              file=sys.stderr)
        assert busy <= 2 * max(idle, IDLE_FLOOR_S), (idle, busy)
        server.cli("task", "cancel", task_id)
        assert server.wait_task(task_id)["status"] == "cancelled"
    finally:
        if daemon is not None:
            daemon.stop()
        server.stop()
