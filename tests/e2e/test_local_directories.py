"""Local directories through the real daemon: path rules at save time, the in-place queue, worktree
mode in parallel, and recovery after a crash (R-LD-*, R-WT-*, R-RES-9)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from pathlib import Path

from .harness import UNCONFINED, Daemon, Server, git, make_repo, wait_until


def _local_project(server, daemon, folder: Path, mode: str = "in_place", label: str = "my folder") -> dict:
    return server.api("POST", "/api/projects", {"title": f"{mode} project", "resources": [{
        "resource_type": "local_directory", "label": label,
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": mode}}]})


def _agent(server, name: str, script: str, concurrent: int = 1) -> None:
    server.api("POST", "/api/agents", {**UNCONFINED, "name": name, "provider": "command", "max_concurrent_tasks": concurrent,
                                       "command": ["sh", "-c", script]})


def _assign(server, project: dict, agent: str, n: int) -> list[str]:
    ids = []
    for i in range(n):
        issue = server.api("POST", "/api/issues", {"title": f"job {i}", "project_id": project["id"], "assignee": agent})
        ids.append(server.runs(issue["number"])[0]["id"])
    return ids


def test_path_rules_are_checked_by_the_owning_daemon_at_save_time(server, start_daemon, tmp_path):
    daemon = start_daemon()
    p = server.api("POST", "/api/projects", {"title": "rules"})
    url = f"/api/projects/{p['id']}/resources"
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for path, words in (("/etc", "system"), (str(a_file), "not a directory"), (str(tmp_path / "missing"), "does not exist")):
        r = server.http.post(url, json={"resource_type": "local_directory",
                                        "resource_ref": {"local_path": path, "daemon_id": daemon.id}})
        assert r.status_code == 422 and words in r.json()["detail"], (path, r.text)
    assert server.api("GET", url) == []
    ok = tmp_path / "fine"
    ok.mkdir()
    assert server.http.post(url, json={"resource_type": "local_directory",
                                       "resource_ref": {"local_path": str(ok), "daemon_id": daemon.id}}).status_code == 201


def test_a_path_gone_bad_fails_the_task_naming_the_rule(server, start_daemon, tmp_path):
    daemon = start_daemon()
    folder = tmp_path / "soon-gone"
    folder.mkdir()
    project = _local_project(server, daemon, folder)
    _agent(server, "noop", "true")
    shutil.rmtree(folder)
    task = server.wait_task(_assign(server, project, "noop", 1)[0])
    assert task["status"] == "failed" and "does not exist" in task["failure_reason"]
    assert "my folder" in task["failure_reason"] and not folder.exists()


def test_in_place_tasks_run_one_at_a_time_and_waiters_say_why(server, start_daemon, tmp_path):
    daemon = start_daemon(max_tasks=4)
    folder = make_repo(tmp_path / "shared")
    log = tmp_path / "order.log"
    _agent(server, "serial", f'echo "start $PREDICTORX_TASK_ID" >> {log}; sleep 0.15; '
                             f'echo "end $PREDICTORX_TASK_ID" >> {log}', concurrent=20)
    project = _local_project(server, daemon, folder, label="shared checkout")
    ids = _assign(server, project, "serial", 20)
    waiting = wait_until(lambda: [t for t in server.api("GET", "/api/tasks", params={"status": "waiting_local_directory"})],
                         timeout=20, what="a waiting task")
    reason = waiting[0]["wait_reason"]
    assert "shared checkout" in reason and str(folder) not in reason and str(folder.resolve()) not in reason
    for tid in ids:
        assert server.wait_task(tid, timeout=60)["status"] == "completed"
    lines = log.read_text().split("\n")[:-1]
    assert len(lines) == 40
    for i in range(0, 40, 2):  # strictly start/end pairs of the same task: never two at once
        assert lines[i].startswith("start ") and lines[i + 1] == "end " + lines[i][6:]
    assert git(folder, "status", "--porcelain") == ""


def test_cancelling_a_waiting_task_frees_its_place_at_once(server, start_daemon, tmp_path):
    daemon = start_daemon()
    folder = tmp_path / "busy"
    folder.mkdir()
    gate = tmp_path / "gate"
    _agent(server, "gated", f'while [ ! -f {gate} ]; do sleep 0.05; done', concurrent=5)
    project = _local_project(server, daemon, folder)
    first, second, third = _assign(server, project, "gated", 3)
    wait_until(lambda: server.api("GET", f"/api/tasks/{second}")["status"] == "waiting_local_directory", what="waiting")
    wait_until(lambda: server.api("GET", f"/api/tasks/{third}")["status"] == "waiting_local_directory", what="waiting")
    server.cli("task", "cancel", second)
    assert server.api("GET", f"/api/tasks/{second}")["status"] == "cancelled"
    gate.write_text("go")
    assert server.wait_task(first)["status"] == "completed"
    assert server.wait_task(third)["status"] == "completed"
    assert server.api("GET", f"/api/tasks/{second}")["status"] == "cancelled"


def test_twenty_worktree_tasks_run_in_parallel_each_on_its_own_branch(server, start_daemon, tmp_path):
    daemon = start_daemon(max_tasks=20)
    folder = make_repo(tmp_path / "repo", {"tracked.txt": "clean\n", ".gitignore": "build/\n", "sub/keep.txt": "k\n"})
    (folder / "tracked.txt").write_text("dirty\n")
    (folder / "untracked.txt").write_text("new\n")
    (folder / "build").mkdir()
    (folder / "build" / "out.o").write_text("ignored\n")
    status_before = git(folder, "status", "--porcelain")  # refreshes the index's stat data first
    index_before = (folder / ".git" / "index").read_bytes()
    log = tmp_path / "windows.log"
    _agent(server, "para", f'grep -q dirty tracked.txt && test -f untracked.txt && test ! -e build/out.o || exit 3; '
                           f'echo "start $(date +%s.%N)" >> {log}; sleep 0.5; '
                           f'echo "$PREDICTORX_TASK_ID" > "$PREDICTORX_TASK_ID.txt"; '
                           f'git add "$PREDICTORX_TASK_ID.txt" && git commit -qm "task $PREDICTORX_TASK_ID"; '
                           f'echo "end $(date +%s.%N)" >> {log}', concurrent=20)
    project = _local_project(server, daemon, folder, mode="worktree")
    ids = _assign(server, project, "para", 20)
    tasks = [server.wait_task(t, timeout=90) for t in ids]
    assert all(t["status"] == "completed" for t in tasks), [t["failure_reason"] for t in tasks]
    starts = sorted(float(x.split()[1]) for x in log.read_text().splitlines() if x.startswith("start"))
    ends = sorted(float(x.split()[1]) for x in log.read_text().splitlines() if x.startswith("end"))
    assert starts[1] < ends[0], "worktree tasks should overlap in time"
    for t in tasks:
        branch = t["branch_name"]
        assert branch.startswith("agent/para/")
        changed = git(folder, "diff", "--name-only", f"{branch}~1", branch).split()
        assert changed == [f"{t['id']}.txt"]
        assert git(folder, "show", f"{branch}:tracked.txt") == "dirty\n"  # the baseline held the dirty state
    assert (folder / ".git" / "index").read_bytes() == index_before
    assert git(folder, "status", "--porcelain") == status_before
    assert git(folder, "stash", "list") == ""
    assert "agent/para" not in git(folder, "worktree", "list")


def test_worktree_mode_needs_a_git_repository(server, start_daemon, tmp_path):
    daemon = start_daemon()
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    _agent(server, "wt", "touch changed.txt")
    task = server.wait_task(_assign(server, _local_project(server, daemon, folder, mode="worktree"), "wt", 1)[0])
    assert task["status"] == "failed" and "git" in task["failure_reason"]
    assert sorted(p.name for p in folder.iterdir()) == ["a.txt"]  # never ran in place


def test_a_restarted_daemon_recovers_a_worktree_its_crash_left(database_url, tmp_path):
    """R-EX-6: the restarted daemon reconciles its crashed task ("restarted") and recovers the worktree.

    Its own server with a long heartbeat timeout: with a short one, a daemon start that takes
    longer on a busy machine lets the sweeper fail the task first, which is a different (also
    correct) path than the one this test is about."""
    server = Server(tmp_path / "patient-server", database_url, PREDICTORX_DAEMON_TIMEOUT="60")
    daemon = Daemon(server, tmp_path / "daemon-first")
    try:
        _recover_after_crash(server, daemon, tmp_path)
    finally:
        daemon.stop()
        server.stop()


def _recover_after_crash(server, daemon, tmp_path):
    folder = make_repo(tmp_path / "repo")
    agent_pid = tmp_path / "crashy.pid"  # the agent says who it is: the test kills only its own process
    _agent(server, "crashy", f'echo work > leftover.txt; echo $$ > {agent_pid}; exec sleep 600')
    project = _local_project(server, daemon, folder, mode="worktree")
    tid = _assign(server, project, "crashy", 1)[0]
    wait_until(lambda: server.api("GET", f"/api/tasks/{tid}")["status"] == "running", what="running")
    branch = server.api("GET", f"/api/tasks/{tid}")["branch_name"]
    wait_until(lambda: list(tmp_path.glob("**/leftover.txt")) or list(Path(daemon.env["PREDICTORX_WORKSPACES_ROOT"]).glob("**/leftover.txt")),
               what="the agent's leftover")
    wait_until(lambda: agent_pid.exists() and agent_pid.read_text().strip(), what="the agent's pid")
    daemon.kill()
    # The agent's process group outlives a SIGKILLed daemon; end it (ours alone) as a reboot would.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(os.getpgid(int(agent_pid.read_text())), signal.SIGKILL)
    again = Daemon(server, daemon.home)  # same state dir: same daemon id, same locks
    try:
        task = server.wait_task(tid, timeout=30)
        assert task["status"] == "failed" and "restarted" in task["failure_reason"]
        wait_until(lambda: "recovery:" in again.output(), timeout=15, what="a recovery line in the log")
        assert "leftover.txt" in git(folder, "show", "--name-only", "--format=", branch)
        assert branch not in git(folder, "worktree", "list")
    finally:
        again.stop()


def test_status_and_runs_show_waiting_everywhere(server, start_daemon, tmp_path):
    daemon = start_daemon()
    folder = tmp_path / "f"
    folder.mkdir()
    gate = tmp_path / "gate"
    _agent(server, "g", f'while [ ! -f {gate} ]; do sleep 0.05; done', concurrent=2)
    project = _local_project(server, daemon, folder, label="work tree")
    first, second = _assign(server, project, "g", 2)
    wait_until(lambda: server.api("GET", f"/api/tasks/{second}")["status"] == "waiting_local_directory", what="waiting")
    issue = server.api("GET", f"/api/tasks/{second}")["issue_number"]
    runs = json.loads(server.cli("issue", "runs", str(issue), "--output", "json").stdout)
    assert runs[0]["status"] == "waiting_local_directory" and first in runs[0]["wait_reason"]
    table = server.cli("task", "get", second).stdout
    assert "waiting_local_directory" in table and "work tree" in table
    gate.write_text("go")
    server.wait_task(second)


def test_two_daemons_on_one_machine_share_the_folder_lock(server, start_daemon, tmp_path):
    """R-LD-5: each daemon has its own state dir, yet they see one lock per real folder."""
    a, b = start_daemon("a", max_tasks=4), start_daemon("b", max_tasks=4)
    folder = tmp_path / "shared"
    folder.mkdir()
    link = tmp_path / "link-to-shared"
    link.symlink_to(folder)
    log = tmp_path / "order.log"
    project = server.api("POST", "/api/projects", {"title": "two machines' view", "resources": [
        {"resource_type": "local_directory", "label": "via a", "resource_ref": {"local_path": str(folder), "daemon_id": a.id}},
        {"resource_type": "local_directory", "label": "via b", "resource_ref": {"local_path": str(link), "daemon_id": b.id}},
    ]})
    script = f'echo "start $PREDICTORX_TASK_ID" >> {log}; sleep 0.2; echo "end $PREDICTORX_TASK_ID" >> {log}'
    ids = []
    for d in (a, b):  # one agent pinned to each daemon, so both daemons work on the folder
        server.api("POST", "/api/agents", {**UNCONFINED, "name": f"on-{d.home.name}", "provider": "command", "runtime": d.id,
                                           "max_concurrent_tasks": 4, "command": ["sh", "-c", script]})
        ids += _assign(server, project, f"on-{d.home.name}", 4)
    tasks = [server.wait_task(t, timeout=60) for t in ids]
    assert all(t["status"] == "completed" for t in tasks)
    assert {t["daemon_id"] for t in tasks} == {a.id, b.id}
    lines = log.read_text().split("\n")[:-1]
    for i in range(0, len(lines), 2):
        assert lines[i].startswith("start ") and lines[i + 1] == "end " + lines[i][6:]


def test_stopping_a_daemon_hands_back_waiting_work_and_fails_running_work(server, start_daemon, tmp_path):
    daemon = start_daemon()
    folder = tmp_path / "f"
    folder.mkdir()
    _agent(server, "sleepy", "sleep 600", concurrent=2)
    project = _local_project(server, daemon, folder)
    running, waiting = _assign(server, project, "sleepy", 2)
    wait_until(lambda: server.api("GET", f"/api/tasks/{waiting}")["status"] == "waiting_local_directory", what="waiting")
    daemon.stop()  # SIGTERM: an orderly stop, not a user's cancel
    assert server.api("GET", f"/api/tasks/{waiting}")["status"] == "queued"
    t = server.api("GET", f"/api/tasks/{running}")
    assert t["status"] == "failed" and "was stopped" in t["failure_reason"]


def test_a_claude_run_in_its_own_checkout_gets_no_read_recorder_one_in_a_shared_folder_does(
        server, start_daemon, tmp_path):
    """Issue 30: agents-room records what an agent reads and writes (a Python start at every Read,
    Edit and Write, ~19 ms of CPU) to tell it of another session's change. A run's own workdir is
    written by nobody else, so its run is configured without that hook (`run-config
    --own-checkout`); a run in a person's folder in place, which others may change, keeps it."""
    records = tmp_path / "records"
    records.mkdir()
    daemon = start_daemon(FAKE_AGENT_RECORD=str(records))
    folder = tmp_path / "shared-folder"
    folder.mkdir()
    project = _local_project(server, daemon, folder)
    server.api("POST", "/api/agents", {**UNCONFINED, "name": "claude-1", "provider": "claude"})
    own = server.api("POST", "/api/issues", {"title": "in its own workdir", "assignee": "claude-1"})
    in_place = server.api("POST", "/api/issues", {"title": "in the folder", "project_id": project["id"],
                                                  "assignee": "claude-1"})
    seen = {}
    for name, issue in (("own", own), ("in_place", in_place)):
        task = server.wait_task(server.runs(issue["number"])[0]["id"])
        assert task["status"] == "completed", task
        seen[name] = json.loads((records / f"{task['id']}.json").read_text())
    assert "--settings" in seen["own"]["argv"] and seen["own"]["post_tool_use"] == ["*"]
    assert seen["in_place"]["cwd"] == str(folder)
    assert seen["in_place"]["post_tool_use"] == ["*", "Read|Edit|Write|MultiEdit|NotebookEdit"]
