"""The agent's work for review (issue 13 §1, R-WT-3..5): the daemon sends the branch's diff against
its baseline with the task's end; a repository checkout's uncommitted leftovers are committed to
its branch in the repo cache, as worktree mode does; a task that changed nothing says so."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .harness import git, make_repo


def _agent(server, name: str, script: str) -> None:
    server.api("POST", "/api/agents", {"name": name, "provider": "command", "command": ["sh", "-c", script]})


def _run(server, project: dict, agent: str) -> dict:
    issue = server.api("POST", "/api/issues", {"title": "edit", "project_id": project["id"], "assignee": agent})
    return server.wait_task(server.runs(issue["number"])[0]["id"], timeout=60)


def test_checkout_leftovers_are_committed_and_the_diff_matches_git(server, start_daemon, tmp_path):
    start_daemon()
    src = make_repo(tmp_path / "src", {"app.py": "print('api')\n", "old.txt": "gone soon\n"})
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    project = server.api("POST", "/api/projects", {"title": "Shop", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": f"file://{bare}"}}]})
    _agent(server, "editor", "printf 'print(\"v2\")\\nprint(\"more\")\\n' > app.py; rm old.txt; echo hi > new.md")
    task = _run(server, project, "editor")
    assert task["status"] == "completed", task
    review = server.api("GET", f"/api/tasks/{task['id']}/review")
    assert review["mode"] == "checkout" and review["branch"] == task["branch_name"]
    cache = Path(review["repo_path"])
    # The leftovers are a commit on the task's branch in the cache, not only files in a directory.
    assert git(cache, "log", "--format=%s", "-1", task["branch_name"]).startswith("Uncommitted changes left by agent editor")
    expected = git(cache, "diff", "--numstat", review["base"], task["branch_name"])
    got = "".join(f"{f['added']}\t{f['removed']}\t{f['path']}\n" for f in review["files"])
    assert sorted(got.splitlines()) == sorted(expected.splitlines())
    assert review["patch"] == git(cache, "diff", "-M", "--no-color", review["base"], task["branch_name"], "--")
    assert Path(review["worktree_path"]).is_dir()
    # The printed command works as printed: the branch can be fetched from the cache.
    clone = tmp_path / "mine"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    subprocess.run(f"cd {clone} && git fetch {cache} {task['branch_name']}:{task['branch_name']}",
                   shell=True, check=True, capture_output=True, timeout=30)
    assert git(clone, "show", f"{task['branch_name']}:new.md") == "hi\n"


def test_a_worktree_task_that_changed_nothing_says_no_changes(server, start_daemon, tmp_path):
    daemon = start_daemon()
    folder = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    project = server.api("POST", "/api/projects", {"title": "wt", "resources": [{
        "resource_type": "local_directory", "label": "repo",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "worktree"}}]})
    _agent(server, "idle", "true")
    task = _run(server, project, "idle")
    assert task["status"] == "completed", task
    assert task["branch_name"] is None  # deleted (R-WT-5), and the task no longer names it
    review = server.api("GET", f"/api/tasks/{task['id']}/review")
    assert review["mode"] == "worktree" and review["branch"] is None and review["changed"] is False
    assert "agent/idle" not in git(folder, "branch", "--list")
