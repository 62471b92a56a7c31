"""Faults, each made for real and recovered from without a person (issue 14, R-EX-6, R-SC-2):
PostgreSQL restarted mid-run, the server killed while the daemon uploads, the env root's disk full,
the person's repository locked by git, a daemon whose clock is 10 minutes off."""

from __future__ import annotations

import os
import signal
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from databases import POSTGRES_URL

from .harness import Daemon, Server, make_repo, wait_until
from .throwaway_pg import ThrowawayPostgres, pg_bindir

LINES = 60


@pytest.fixture
def server(tmp_path):  # the faults below do not depend on the backend
    s = Server(tmp_path / "server-home", f"sqlite:///{tmp_path / 'px.db'}")
    yield s
    s.stop()


def _talker(server: Server, tmp_path: Path, name: str = "talker", lines: int = LINES, pause: float = 0.05) -> None:
    script = tmp_path / f"{name}.sh"
    script.write_text(f'#!/bin/sh\ni=0\nwhile [ $i -lt {lines} ]; do echo "line $i"; i=$((i+1)); sleep {pause}; done\n')
    server.api("POST", "/api/agents", {"name": name, "provider": "command", "command": ["/bin/sh", str(script)]})


def _assign(server: Server, agent: str, **issue) -> str:
    made = server.api("POST", "/api/issues", {"title": f"for {agent}", "assignee": agent, **issue})
    return server.runs(made["number"])[0]["id"]


def _messages(server: Server, task_id: str) -> list[dict]:
    return server.api("GET", f"/api/tasks/{task_id}/messages", params={"limit": 1000})


def _assert_every_line_once(server: Server, task_id: str, lines: int = LINES) -> None:
    msgs = _messages(server, task_id)
    assert [m["seq"] for m in msgs] == list(range(len(msgs))), "a gap or a duplicate in the sequence"
    said = [m["content"].get("text", "").strip() for m in msgs if m["kind"] == "text"]
    assert [t for t in said if t.startswith("line ")] == [f"line {i}" for i in range(lines)]


@pytest.mark.postgres
@pytest.mark.skipif(not POSTGRES_URL or pg_bindir() is None, reason="needs PostgreSQL (server binaries)")
def test_postgres_restarted_mid_run(tmp_path):
    pg = ThrowawayPostgres()  # never the shared cluster: this one is restarted
    server = daemon = None
    try:
        server = Server(tmp_path / "server-home", pg.url, PREDICTORX_DAEMON_TIMEOUT="30")
        daemon = Daemon(server, tmp_path / "daemon")
        _talker(server, tmp_path)
        task_id = _assign(server, "talker")
        wait_until(lambda: len(_messages(server, task_id)) >= 5, 30, what="the first messages")
        pg.restart()  # every connection of the server is cut mid-run
        done = server.wait_task(task_id, timeout=60)
        assert done["status"] == "completed", done
        _assert_every_line_once(server, task_id)
        # Wake-ups work again (the server LISTENs anew): a new task runs at once, not at the 30 s poll.
        again = _assign(server, "talker")
        assert server.wait_task(again, timeout=25)["status"] == "completed"
        assert daemon.proc.poll() is None and server.proc.poll() is None
    finally:
        if daemon:
            daemon.stop()
        if server:
            server.stop()
        pg.destroy()


def test_server_killed_while_the_daemon_uploads(tmp_path):
    url = f"sqlite:///{tmp_path / 'px.db'}"
    server = Server(tmp_path / "server-home", url, PREDICTORX_DAEMON_TIMEOUT="30")
    daemon = Daemon(server, tmp_path / "daemon")
    try:
        _talker(server, tmp_path, lines=80)
        task_id = _assign(server, "talker")
        wait_until(lambda: len(_messages(server, task_id)) >= 5, 30, what="the first messages")
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(10)
        server.stop()
        server = Server(tmp_path / "server-home", url, port=server.port, PREDICTORX_DAEMON_TIMEOUT="30")
        done = server.wait_task(task_id, timeout=60)
        assert done["status"] == "completed", done
        _assert_every_line_once(server, task_id, 80)
        assert daemon.proc.poll() is None
    finally:
        daemon.stop()
        server.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_env_root_disk_full(server, tmp_path):
    disk = tmp_path / "small-disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], check=True, timeout=30)
    daemon = None
    try:
        daemon = Daemon(server, tmp_path / "daemon", PREDICTORX_WORKSPACES_ROOT=str(disk / "ws"))
        filler = disk / "filler"
        with filler.open("wb") as fh:  # fill it to the last byte
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        _talker(server, tmp_path, lines=3)
        failed = server.wait_task(_assign(server, "talker"), timeout=30)
        assert failed["status"] == "failed", failed
        assert "disk holding the task's env root is full" in failed["failure_reason"]
        assert str(disk) in failed["failure_reason"] and "Traceback" not in failed["failure_reason"]
        # The daemon stays up and runs the next task once there is room again.
        assert daemon.proc.poll() is None
        filler.unlink()
        assert server.wait_task(_assign(server, "talker"), timeout=30)["status"] == "completed"
    finally:
        if daemon:
            daemon.stop()
        subprocess.run(["umount", "-l", str(disk)], timeout=30)


def test_person_repository_locked_by_git(server, tmp_path):
    daemon = Daemon(server, tmp_path / "daemon", PREDICTORX_GIT_LOCK_WAIT="3")
    try:
        folder = make_repo(tmp_path / "repo")
        project = server.api("POST", "/api/projects", {"title": "wt", "resources": [{
            "resource_type": "local_directory", "label": "repo",
            "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "worktree"}}]})
        server.api("POST", "/api/agents", {"name": "wt", "provider": "command", "command": ["sh", "-c", "echo done"]})
        lock = folder / ".git" / "index.lock"
        lock.write_text("")  # a git command is changing the person's repository
        task_id = _assign(server, "wt", project_id=project["id"])
        waiting = wait_until(lambda: (t := server.api("GET", f"/api/tasks/{task_id}"))["status"]
                             == "waiting_local_directory" and t, 20, what="the task to wait for git")
        assert "index.lock" in waiting["wait_reason"] and "git is busy" in waiting["wait_reason"]
        lock.unlink()  # git finished: the worktree is made and the agent runs
        assert server.wait_task(task_id, timeout=30)["status"] == "completed"

        lock.write_text("")  # left behind by a git that crashed: the task fails, saying what to do
        failed = server.wait_task(_assign(server, "wt", project_id=project["id"]), timeout=30)
        assert failed["status"] == "failed" and str(lock) in failed["failure_reason"]
        assert "delete that file" in failed["failure_reason"]
        lock.unlink()
    finally:
        daemon.stop()


def test_daemon_clock_ten_minutes_off(server, tmp_path):
    """Leases, heartbeats and sweeps use the server's clock only: a daemon 10 minutes ahead runs
    tasks longer than the lease without being swept, and every time on the task is the server's."""
    skew = tmp_path / "skew"
    skew.mkdir()
    (skew / "sitecustomize.py").write_text(
        "import time\n_real = time.time\n_real_ns = time.time_ns\n"
        "time.time = lambda: _real() + 600\ntime.time_ns = lambda: _real_ns() + 600 * 10**9\n")
    daemon = Daemon(server, tmp_path / "daemon", PYTHONPATH=str(skew), PREDICTORX_TASK_LEASE="2")
    try:
        _talker(server, tmp_path, lines=40, pause=0.1)  # 4 s: past the 2 s lease and 3 s daemon timeout
        before = datetime.now(timezone.utc)
        done = server.wait_task(_assign(server, "talker"), timeout=40)
        after = datetime.now(timezone.utc)
        assert done["status"] == "completed" and done["attempt"] == 1, done
        for field in ("dispatched_at", "started_at", "finished_at"):
            at = datetime.fromisoformat(done[field])
            assert before.timestamp() - 1 <= at.timestamp() <= after.timestamp() + 1, (field, at)
        assert server.api("GET", f"/api/daemons/{daemon.id}")["online"]
    finally:
        daemon.stop()
