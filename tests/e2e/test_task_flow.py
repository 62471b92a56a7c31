"""Issue → task → agent ran in the right code with the right context → messages in order → done."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil
import pytest

from .harness import UNCONFINED, git, make_repo, wait_until


def _bare_remote(tmp_path: Path) -> str:
    src = make_repo(tmp_path / "src-repo", {"README.md": "# api\n", "app.py": "print('api')\n"})
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    return f"file://{bare}"


def test_claude_agent_runs_in_a_checkout_of_the_project_repo(server, start_daemon, tmp_path):
    record = tmp_path / "record.json"
    daemon = start_daemon(FAKE_AGENT_RECORD=str(record), FAKE_AGENT_VERSION="9.9.9 (fake)")
    # R-EX-1: registered with its daemon_id, one runtime per CLI on PATH with its version; `daemon list`
    listed = json.loads(server.cli("daemon", "list", "--output", "json").stdout)
    runtimes = {r["provider"]: r for r in listed[0]["runtimes"]}
    assert listed[0]["id"] == daemon.id and listed[0]["online"] is True
    # fakes on PATH + command; acp: its profiles run the gemini and opencode found there
    assert set(runtimes) == {"claude", "codex", "gemini", "opencode", "command", "acp"}
    assert runtimes["claude"]["version"] == "9.9.9 (fake)" and "local-worktree-v1" in runtimes["claude"]["capabilities"]
    url = _bare_remote(tmp_path)
    project = server.api("POST", "/api/projects", {"title": "Storefront", "description": "The shop.",
                                                   "resources": [{"resource_type": "github_repo",
                                                                  "resource_ref": {"url": url, "ref": "main"}}]})
    server.cli("agent", "create", "--name", "claude-1", "--provider", "claude", "--no-sandbox")
    out = server.cli("issue", "create", "--title", "Fix the API", "--project", project["id"],
                     "--assignee", "claude-1", "--output", "json")
    number = json.loads(out.stdout)["number"]
    runs = wait_until(lambda: (r := server.runs(number)) and r, what="a task")
    task = server.wait_task(runs[0]["id"])
    assert task["status"] == "completed", task
    # The fake agent changed nothing in its checkout, so its branch was deleted (as R-WT-5) and
    # the review says so (issue 13 §1, §5).
    assert task["branch_name"] is None
    review = server.api("GET", f"/api/tasks/{task['id']}/review")
    assert review["mode"] == "checkout" and review["changed"] is False and review["branch"] is None
    assert task["session_id"] and task["result"]

    seen = json.loads(record.read_text())
    assert Path(seen["cwd"]).name == "remote" and (Path(seen["cwd"]) / "app.py").exists()
    assert "## Project Context" in seen["instruction"] and "## Repositories" in seen["instruction"]
    assert "Storefront" in seen["instruction"] and url in seen["instruction"]
    assert seen["resources"]["project_title"] == "Storefront"
    assert seen["env"]["PREDICTORX_TOKEN"].startswith("pxt_")
    assert seen["env"]["PREDICTORX_TASK_ID"] == task["id"]
    assert daemon.id not in json.dumps(seen["resources"])  # no machine-local rows for this project

    msgs = json.loads(server.cli("task", "messages", task["id"], "--output", "json").stdout)
    assert [m["seq"] for m in msgs] == list(range(len(msgs)))
    kinds = [m["kind"] for m in msgs]
    assert "tool_use" in kinds and "tool_result" in kinds and kinds.count("text") >= 1
    runs_json = json.loads(server.cli("issue", "runs", str(number), "--output", "json").stdout)
    assert runs_json[0]["status"] == "completed" and runs_json[0]["branch_name"] == task["branch_name"]


def test_in_place_codex_leaves_the_folder_byte_identical(server, start_daemon, tmp_path):
    # R-LD-7: in place means no branch switch, no stash or autocommit of the dirty tree
    record = tmp_path / "record.json"
    daemon = start_daemon(FAKE_AGENT_RECORD=str(record))
    folder = make_repo(tmp_path / "mine", {"AGENTS.md": "# My rules\r\nBe nice.\r\n", "main.py": "x = 1\n"})
    (folder / "notes.txt").write_text("uncommitted\n")
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts}
    status_before = git(folder, "status", "--porcelain")
    project = server.api("POST", "/api/projects", {"title": "Mine", "resources": [{
        "resource_type": "local_directory", "label": "my checkout",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id}}]})
    server.cli("agent", "create", "--name", "codex-1", "--provider", "codex", "--no-sandbox")
    issue = server.api("POST", "/api/issues", {"title": "Look around", "project_id": project["id"], "assignee": "codex-1"})
    task = server.wait_task(server.runs(issue["number"])[0]["id"])
    assert task["status"] == "completed", task
    seen = json.loads(record.read_text())
    assert Path(seen["cwd"]).resolve() == folder.resolve()
    assert seen["instruction"].startswith("# My rules") and "## Project Context" in seen["instruction"]
    assert seen["resources"]["resources"][0]["label"] == "my checkout"
    after = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before
    assert git(folder, "status", "--porcelain") == status_before


def test_cancel_mid_run_kills_the_agent_group(server, start_daemon, tmp_path):
    records = tmp_path / "records"
    records.mkdir()
    start_daemon(FAKE_AGENT_RECORD=str(records), FAKE_AGENT_MODE="hang")
    server.cli("agent", "create", "--name", "slow", "--provider", "claude", "--no-sandbox")
    issue = server.api("POST", "/api/issues", {"title": "Take forever", "assignee": "slow"})
    task_id = wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"]
    rec = records / f"{task_id}.json"
    seen = wait_until(lambda: rec.exists() and (d := json.loads(rec.read_text())).get("child_pid") and d,
                      what="the agent to start its child")
    assert server.api("GET", f"/api/tasks/{task_id}")["status"] == "running"
    started = time.monotonic()
    out = server.cli("task", "cancel", task_id)
    assert "cancelled" in out.stdout
    for pid in (seen["pid"], seen["child_pid"]):
        wait_until(lambda pid=pid: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
                   timeout=5, what=f"pid {pid} to die")
    assert time.monotonic() - started < 5
    assert server.api("GET", f"/api/tasks/{task_id}")["status"] == "cancelled"


@pytest.mark.server_env(PREDICTORX_DAEMON_TIMEOUT="3")  # a dead daemon's task fails within seconds
def test_killed_daemon_fails_its_running_task_and_keeps_messages(server, start_daemon, tmp_path):
    records = tmp_path / "records"
    records.mkdir()
    daemon = start_daemon(FAKE_AGENT_RECORD=str(records), FAKE_AGENT_MODE="hang")
    server.cli("agent", "create", "--name", "doomed", "--provider", "claude", "--no-sandbox")
    issue = server.api("POST", "/api/issues", {"title": "Crash", "assignee": "doomed"})
    task_id = wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"]
    # The agent itself runs (its record is written) and the first messages are in: the daemon's
    # own notes come before the agent starts, and killing it then left no agent to clean up.
    wait_until(lambda: (records / f"{task_id}.json").exists(), timeout=60, what="the agent to start")
    wait_until(lambda: server.api("GET", f"/api/tasks/{task_id}/messages"), what="the first messages")
    acknowledged = server.api("GET", f"/api/tasks/{task_id}/messages")
    daemon.kill()
    started = time.monotonic()
    task = server.wait_task(task_id, timeout=15)
    assert task["status"] == "failed" and "stopped heartbeating" in task["failure_reason"]
    assert time.monotonic() - started < 10  # daemon timeout 3 s + sweep interval 0.5 s, with slack
    assert server.api("GET", f"/api/tasks/{task_id}/messages")[: len(acknowledged)] == acknowledged
    seen = json.loads((records / f"{task_id}.json").read_text())
    for pid in (seen["pid"], seen.get("child_pid")):
        if pid and psutil.pid_exists(pid):
            psutil.Process(pid).kill()  # the orphaned fake: a real daemon's restart reaps it via recovery


# Two busy daemons on a loaded machine (CI, load 17) went over the harness's 3 s (then) without a
# heartbeat, and the sweeper failed the tasks they held: this test is about claims, not liveness.
@pytest.mark.server_env(PREDICTORX_DAEMON_TIMEOUT="120")
def test_two_daemons_race_for_200_tasks_each_runs_once(server, start_daemon, tmp_path):
    log = tmp_path / "runs.log"
    start_daemon("a")
    start_daemon("b")
    server.api("POST", "/api/agents", {**UNCONFINED, "name": "fast", "provider": "command", "max_concurrent_tasks": 64,
                                       "command": ["sh", "-c", f'echo "$PREDICTORX_TASK_ID" >> {log}']})
    issues = [server.api("POST", "/api/issues", {"title": f"job {i}", "assignee": "fast"}) for i in range(200)]
    wait_until(lambda: len(server.api("GET", "/api/tasks", params={"status": "completed", "limit": 1000})) == 200,
               timeout=300, interval=0.5, what="200 completed tasks")  # a loaded 2-core machine
    lines = log.read_text().split()
    assert len(lines) == 200 and len(set(lines)) == 200
    daemons = {t["daemon_id"] for t in server.api("GET", "/api/tasks", params={"limit": 1000})}
    assert len(daemons) == 2, "both daemons should have claimed some"
    assert len(issues) == 200


def test_agents_of_one_project_meet_in_its_room(server, start_daemon, tmp_path):
    """R-ROOM-15: two Claude agents on one project, in two repositories, land in one room."""
    import os
    import subprocess
    import sys

    records = tmp_path / "records"
    records.mkdir()
    start_daemon(FAKE_AGENT_RECORD=str(records))
    api_url, web_url = _bare_remote(tmp_path / "a"), _bare_remote(tmp_path / "b")
    project = server.api("POST", "/api/projects", {"title": "Storefront", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": api_url}}]})
    other = server.api("POST", "/api/projects", {"title": "Storefront web", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": web_url}}]})
    server.api("POST", "/api/agents", {**UNCONFINED, "name": "api-agent", "provider": "claude"})
    server.api("POST", "/api/agents", {**UNCONFINED, "name": "web-agent", "provider": "claude"})
    ids = []
    for pid, agent in ((project["id"], "api-agent"), (project["id"], "web-agent"), (other["id"], "web-agent")):
        issue = server.api("POST", "/api/issues", {"title": f"work for {agent}", "project_id": pid, "assignee": agent})
        ids.append(server.runs(issue["number"])[0]["id"])
    for tid in ids:
        assert server.wait_task(tid)["status"] == "completed"
    seen = [json.loads((records / f"{tid}.json").read_text()) for tid in ids]
    assert all("--mcp-config" in s["argv"] and "--settings" in s["argv"] for s in seen)
    # joined by `agents-room run-config` before the agent started (no SessionStart hook): the prompt says so
    assert all("you are session s-" in s["prompt"] and "shared:project-storefront-" in s["prompt"] for s in seen[:2])
    assert not any(s["hook_outputs"] for s in seen)
    # Each run over, the daemon ended its session as Claude Code's SessionEnd hook would (issue 30:
    # the daemon does it, no hook process): leases released, rooms kept for a resume.
    who = subprocess.run([sys.executable, "-m", "agents_room", "who", "--all", "--json"], capture_output=True,
                         text=True, timeout=30, env={**os.environ})
    sessions = json.loads(who.stdout)["sessions"]
    assert [s["state"] for s in sessions] == ["ended"] * 3, sessions
    project_rooms = [{r for r in s["rooms"] if r.startswith("shared:project-storefront-")} for s in sessions]
    assert len(sessions) == 3 and all(len(r) == 1 for r in project_rooms)
    assert sorted(len([r for r in project_rooms if r == x]) for x in project_rooms) == [1, 2, 2]
    assert any(s["rooms"] and any(r.startswith("repo:") for r in s["rooms"]) for s in sessions)
