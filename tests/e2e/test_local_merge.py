"""Merge and discard from the server, for a local folder with no forge (issue 22 §6): the server asks
the folder's daemon and waits; worktree mode (fast-forward, merge commit, a dirty file refused and
named, discard) and in place (the agent's own commits named as the task's branch); who did it is
recorded on the task; only the folder's owner may; an offline daemon is said so."""

from __future__ import annotations

from pathlib import Path

from .harness import UNCONFINED, git, make_repo, wait_until

EDIT = "echo 'agent line' >> app.txt"
#: In place the agent commits itself (R-LD-7: nothing is committed for it).
COMMIT_IN_PLACE = ("echo 'agent line' >> app.txt && git add app.txt && "
                   "git -c user.name=bot -c user.email=bot@example.com commit -qm 'agent work'")


def _setup(server, start_daemon, tmp_path: Path, mode: str, script: str):
    daemon = start_daemon()
    folder = make_repo(tmp_path / "repo", {"app.txt": "v1\n", "other.txt": "o\n"})
    project = server.api("POST", "/api/projects", {"title": "local", "resources": [{
        "resource_type": "local_directory", "label": "repo",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": mode}}]})
    server.api("POST", "/api/agents", {"name": "bot", "provider": "command", "command": ["sh", "-c", script],
                                       **UNCONFINED})
    return daemon, folder, project


def _run(server, project) -> dict:
    issue = server.api("POST", "/api/issues", {"title": "edit", "project_id": project["id"], "assignee": "bot"})
    task = server.wait_task(server.runs(issue["number"])[-1]["id"], timeout=60)
    assert task["status"] == "completed", task
    return task


def test_worktree_merge_fast_forward_then_merge_commit_dirty_refused_and_discard(server, start_daemon, tmp_path):
    daemon, folder, project = _setup(server, start_daemon, tmp_path, "worktree", EDIT)
    first = _run(server, project)
    merged = server.api("POST", f"/api/tasks/{first['id']}/local-merge")
    assert merged["how"] == "fast-forward" and merged["into"] == "main"
    assert git(folder, "rev-parse", "HEAD").strip() == merged["sha"] == git(folder, "rev-parse", first["branch_name"]).strip()
    assert (folder / "app.txt").read_text() == "v1\nagent line\n"
    review = server.api("GET", f"/api/tasks/{first['id']}/review")
    assert review["merged"]["by"]["user_id"] and review["merged"]["how"] == "fast-forward"
    messages = server.api("GET", f"/api/tasks/{first['id']}/messages")
    assert any(m["content"].get("event") == "local_merge" for m in messages)
    again = server.http.post(f"/api/tasks/{first['id']}/local-merge")
    assert again.status_code == 409 and "already merged" in again.json()["detail"]

    second = _run(server, project)
    (folder / "other.txt").write_text("my own change\n")
    git(folder, "commit", "-qam", "mine meanwhile")
    (folder / "app.txt").write_text("uncommitted edit of mine\n")  # a file the task's branch changes
    refused = server.http.post(f"/api/tasks/{second['id']}/local-merge")
    assert refused.status_code == 409 and "app.txt" in refused.json()["detail"], refused.text
    assert (folder / "app.txt").read_text() == "uncommitted edit of mine\n"
    git(folder, "checkout", "-q", "--", "app.txt")
    merged = server.api("POST", f"/api/tasks/{second['id']}/local-merge")
    assert merged["how"] == "merge-commit"
    assert len(git(folder, "log", "-1", "--format=%P").split()) == 2

    third = _run(server, project)
    assert git(folder, "branch", "--list", third["branch_name"]).strip()
    discarded = server.api("POST", f"/api/tasks/{third['id']}/local-discard")
    assert discarded["how"] == "deleted"
    assert git(folder, "branch", "--list", third["branch_name"]) == ""


def test_in_place_commits_are_the_tasks_branch_merge_says_so_and_discard_keeps_the_persons_branch(
        server, start_daemon, tmp_path):
    daemon, folder, project = _setup(server, start_daemon, tmp_path, "in_place", COMMIT_IN_PLACE)
    task = _run(server, project)
    branch = task["branch_name"]
    assert branch and branch.startswith("agent/bot/")
    assert git(folder, "symbolic-ref", "--short", "HEAD").strip() == "main"  # nothing switched
    head = git(folder, "rev-parse", "HEAD").strip()
    assert git(folder, "rev-parse", branch).strip() == head
    review = server.api("GET", f"/api/tasks/{task['id']}/review")
    assert review["mode"] == "in_place" and review["files"][0]["path"] == "app.txt"
    merged = server.api("POST", f"/api/tasks/{task['id']}/local-merge")
    assert merged["how"] == "already-merged"

    second = _run(server, project)
    discarded = server.api("POST", f"/api/tasks/{second['id']}/local-discard")
    assert "git reset --keep" in discarded["message"]
    assert git(folder, "branch", "--list", second["branch_name"]) == ""
    assert git(folder, "log", "-1", "--format=%s").strip() == "agent work"  # the person's branch untouched


def test_only_the_folders_owner_may_and_an_offline_daemon_is_said_so(server, start_daemon, tmp_path):
    daemon, folder, project = _setup(server, start_daemon, tmp_path, "worktree", EDIT)
    task = _run(server, project)
    ws = server.api("GET", "/api/workspaces")[0]["id"]
    member = server.api("POST", f"/api/workspaces/{ws}/members", {"name": "mia", "role": "admin"})
    r = server.http.post(f"/api/tasks/{task['id']}/local-merge", headers=server.headers(member["token"]))
    assert r.status_code == 403 and "owner" in r.json()["detail"]
    daemon.stop()
    wait_until(lambda: not server.api("GET", f"/api/daemons/{daemon.id}")["connected"], 30, 0.1, "the stream to end")
    r = server.http.post(f"/api/tasks/{task['id']}/local-merge")
    assert r.status_code == 409 and "offline" in r.json()["detail"]
    assert git(folder, "branch", "--list", task["branch_name"]).strip()  # nothing changed
