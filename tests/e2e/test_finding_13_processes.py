"""Finding 13 (issue 8): process hygiene (R-EX-5, R-SEC-7).

- SIGTERM to `predictorx up` stops its daemon (it used to be orphaned, looping "server
  unreachable", and a new `up` refused it as "already running");
- a stale pid file never blocks a start (the pid file is a flock held for the daemon's life);
- the daemon is a child subreaper and ends every descendant of an agent with its task: a `setsid`
  grandchild ignoring SIGTERM is gone after the task ends and after a cancel;
- the in-place undo record is kept before the instruction block is written, and the next daemon
  start takes a killed daemon's block and `.predictorx/` out of the person's folder byte-exactly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from .harness import FAKES, UNCONFINED, free_port, git, make_repo, wait_until
from .test_finding_02_agent_secrets import WITHOUT_CAPABILITIES


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_finding_13_sigterm_to_up_stops_its_daemon(tmp_path):
    home = tmp_path / "up-home"
    env = {**os.environ, "PREDICTORX_HOME": str(home), "PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PREDICTORX_DATABASE_URL", None)
    port = free_port()
    with open(tmp_path / "up.log", "wb") as log:
        up = subprocess.Popen([*WITHOUT_CAPABILITIES, sys.executable, "-m", "predictorx", "up", "--no-demo",
                               "--port", str(port)],
                              env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def daemon_pid() -> int | None:
            try:
                text = (home / "daemon.pid").read_text().strip()
            except FileNotFoundError:
                return None
            if up.poll() is not None:
                raise AssertionError((tmp_path / "up.log").read_text()[-3000:])
            return int(text) if text else None

        pid = wait_until(daemon_pid, 60, 0.1, "the daemon of `up` to start")
        assert psutil.Process(pid).ppid() == up.pid
        wait_until(lambda: b"registered daemon" in (tmp_path / "up.log").read_bytes(), 30, 0.1,
                   "the daemon to register")
        # Finding 2 as well: neither `up` (the server) nor its daemon is readable by a same-user process.
        for pid_ in (up.pid, pid):
            peek = subprocess.run([*WITHOUT_CAPABILITIES, "cat", f"/proc/{pid_}/environ"], capture_output=True,
                                  timeout=30)
            assert peek.returncode != 0 and b"PREDICTORX" not in peek.stdout
        before_stop = len((tmp_path / "up.log").read_bytes())
        up.send_signal(signal.SIGTERM)  # to `up` alone, not to its group
        up.wait(30)
        wait_until(lambda: _gone(pid), 20, 0.1, "the daemon to stop with `up`")
        # `up` stops its daemon before the server, and the event streams end cleanly: the stop is quiet
        # (it used to log uvicorn's "ASGI callable returned without completing response" and the
        # daemon's "push connection failed … incomplete chunk")
        stopping = (tmp_path / "up.log").read_bytes()[before_stop:].decode()  # a byte offset
        assert "Predictor X stopped" in stopping
        for noise in ("ERROR", "Traceback", "push connection failed", "the local daemon exited"):
            assert noise not in stopping, stopping
        p = subprocess.run([sys.executable, "-m", "predictorx", "daemon", "status", "--output", "json"], env=env,
                           capture_output=True, text=True, timeout=60)
        assert json.loads(p.stdout)["running"] is False, p.stdout
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait(10)
        for proc in psutil.process_iter(["environ"]):
            try:
                if (proc.info["environ"] or {}).get("PREDICTORX_HOME") == str(home):
                    proc.kill()
            except psutil.Error:
                pass


def test_finding_13_a_stale_pid_file_never_blocks_a_start(server, start_daemon):
    daemon = start_daemon()
    home = daemon.home
    daemon.kill()  # kill -9: the pid file stays behind
    assert (home / "daemon.pid").exists()
    # The pid it names now belongs to someone else (here: this test process, alive, not a daemon).
    (home / "daemon.pid").write_text(f"{os.getpid()} {psutil.Process().create_time()}\n")
    again = start_daemon("d1")  # same state dir: must start, not say "already running"
    assert again.id == daemon.id
    pid_text = (home / "daemon.pid").read_text().split()[0]
    assert int(pid_text) == again.proc.pid
    # And a second daemon on the same state dir is still refused, by the live one's lock.
    p = server.cli("daemon", "start", "--foreground", check=False, env={**again.env})
    assert p.returncode != 0 and f"already running (pid {again.proc.pid})" in p.stderr


GRANDCHILD = r'''
import os, signal, subprocess, sys, time
pid_file = sys.argv[1]
# A grandchild in a session of its own that ignores SIGTERM: out of reach of a group kill.
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
    start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
open(pid_file, "w").write(str(child.pid))
print("started", child.pid, flush=True)
if sys.argv[2] == "wait":
    time.sleep(600)
'''


def _grandchild_run(server, tmp_path: Path, name: str, mode: str):
    script = tmp_path / "grandchild.py"
    script.write_text(GRANDCHILD)
    pid_file = tmp_path / f"{name}.pid"
    server.api("POST", "/api/agents", {**UNCONFINED, "name": name, "provider": "command",
                                       "command": [sys.executable, str(script), str(pid_file), mode]})
    issue = server.api("POST", "/api/issues", {"title": f"Leave something running ({mode})", "assignee": name})
    task_id = wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"]
    grandchild = int(wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 30,
                                what="the grandchild to start"))
    return task_id, grandchild


def test_finding_13_a_setsid_grandchild_ignoring_sigterm_ends_with_its_task(server, start_daemon, tmp_path):
    daemon = start_daemon()
    task_id, grandchild = _grandchild_run(server, tmp_path, "leaver", "exit")
    assert server.wait_task(task_id)["status"] == "completed"
    wait_until(lambda: _gone(grandchild), 10, 0.1, "the setsid grandchild to end with its task")

    task_id, grandchild = _grandchild_run(server, tmp_path, "stayer", "wait")
    assert psutil.Process(grandchild).is_running()
    server.cli("task", "cancel", task_id)
    assert server.wait_task(task_id)["status"] == "cancelled"
    wait_until(lambda: _gone(grandchild), 10, 0.1, "the setsid grandchild to end on cancel")
    assert daemon.proc.poll() is None


def test_finding_13_kill_9_mid_in_place_task_next_start_cleans_the_folder(server, start_daemon, tmp_path):
    daemon = start_daemon()
    folder = make_repo(tmp_path / "mine", {"AGENTS.md": "# My rules\r\nBe nice.\r\n", "main.py": "x = 1\n"})
    (folder / "notes.txt").write_text("uncommitted\n")

    def snapshot() -> dict:
        return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
                if ".git" not in p.parts and p.is_file()}

    before, dirs_before = snapshot(), sorted(str(p) for p in folder.rglob("*") if p.is_dir() and ".git" not in p.parts)
    status_before = git(folder, "status", "--porcelain")
    started = tmp_path / "agent-started"
    project = server.api("POST", "/api/projects", {"title": "Mine", "resources": [{
        "resource_type": "local_directory", "label": "my checkout",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "in_place"}}]})
    server.api("POST", "/api/agents", {**UNCONFINED, "name": "slow", "provider": "command",
                                       "command": ["sh", "-c", f"touch {started}; exec sleep 600"]})
    issue = server.api("POST", "/api/issues", {"title": "Work slowly", "project_id": project["id"], "assignee": "slow"})
    wait_until(started.exists, 30, what="the agent to start")
    assert b"predictorx:begin" in (folder / "AGENTS.md").read_bytes()
    assert (folder / ".predictorx" / "project" / "resources.json").exists()
    daemon.kill()  # kill -9 mid-task: nothing of the daemon's cleans up
    assert b"predictorx:begin" in (folder / "AGENTS.md").read_bytes()

    again = start_daemon("d1")  # the next start of this machine's daemon
    wait_until(lambda: snapshot() == before, 20, 0.1, "the folder to be what it was")
    assert not (folder / ".predictorx").exists()
    assert sorted(str(p) for p in folder.rglob("*") if p.is_dir() and ".git" not in p.parts) == dirs_before
    assert git(folder, "status", "--porcelain") == status_before
    assert "Removed the project block in AGENTS.md" in again.output()
    server.wait_task(server.runs(issue["number"])[0]["id"], timeout=30)


FORK_BOMB = r'''
import os, subprocess, sys, time
marker, escapee_file = sys.argv[1], sys.argv[2]
# Short-lived orphans: each child forks a grandchild and exits at once, so the grandchild is
# re-parented to the daemon (a subreaper) and exits there a moment later.
for _ in range(300):
    child = os.fork()
    if child == 0:
        if os.fork() == 0:
            time.sleep(0.05)
            os._exit(0)
        os._exit(0)
    os.waitpid(child, 0)
# And one that leaves everything behind: its own session, an empty environment (no run tag),
# SIGTERM ignored, its parent gone.
escapee = subprocess.Popen([sys.executable, "-c", "import os, signal, sys, time\n"
    "if os.fork(): os._exit(0)\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    f"open({escapee_file!r}, 'w').write(str(os.getpid()))\n"
    "time.sleep(600)"], start_new_session=True, env={}, stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
escapee.wait()
open(marker, "w").write("done")
time.sleep(600)
'''


def _zombies(pid: int) -> list[int]:
    return [c.pid for c in psutil.Process(pid).children() if c.status() == psutil.STATUS_ZOMBIE]


def test_finding_13_a_fork_bomb_of_short_lived_orphans_is_reaped_while_the_run_lasts(server, start_daemon, tmp_path):
    from predictorx.agents import runcgroup

    daemon = start_daemon()
    script, marker, escapee_file = tmp_path / "bomb.py", tmp_path / "forked", tmp_path / "escapee.pid"
    script.write_text(FORK_BOMB)
    server.api("POST", "/api/agents", {**UNCONFINED, "name": "bomber", "provider": "command",
                                       "command": [sys.executable, str(script), str(marker), str(escapee_file)]})
    issue = server.api("POST", "/api/issues", {"title": "Fork a lot", "assignee": "bomber"})
    task_id = wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"]
    wait_until(marker.exists, 60, 0.1, "the agent to fork its children")
    escapee = int(wait_until(lambda: escapee_file.exists() and escapee_file.read_text().strip(), 30,
                             what="the escapee to start"))
    # Reaped as they exit (SIGCHLD), not at the run's end: none stays a zombie of the daemon.
    wait_until(lambda: not _zombies(daemon.proc.pid), 20, 0.1, "the daemon to reap the agent's orphans")
    assert server.api("GET", f"/api/tasks/{task_id}")["status"] == "running"

    server.cli("task", "cancel", task_id)
    assert server.wait_task(task_id)["status"] == "cancelled"
    if runcgroup.available():  # (the fallback cannot find a process without the tag whose parents left)
        wait_until(lambda: _gone(escapee), 10, 0.1, "the untagged escapee to end with its run's cgroup")
    assert not _zombies(daemon.proc.pid)
    assert daemon.proc.poll() is None
