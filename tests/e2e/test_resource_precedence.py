"""Which code a task runs in, through real daemons, real git and a real server.

R-LD-3: a daemon picks the local_directory row with its own daemon_id; a daemon without one runs
the task through the project's github_repo (a worktree of it); on the matching daemon the local
directory takes precedence. R-RES-2: a github_repo's `ref` is what is checked out by default; its
`default_branch_hint` never switches branches."""

from __future__ import annotations

import json
from pathlib import Path

from .harness import UNCONFINED, git, make_repo


def _remote(tmp_path: Path) -> tuple[str, str, str]:
    """A bare remote with `main` and a `release` branch one commit ahead; (url, main, release)."""
    src = make_repo(tmp_path / "src-repo", {"README.md": "# shop\n", "app.py": "print('shop')\n"})
    main = git(src, "rev-parse", "HEAD").strip()
    git(src, "checkout", "-q", "-b", "release")
    (src / "release.txt").write_text("2.0\n")
    git(src, "add", "release.txt")
    git(src, "-c", "commit.gpgSign=false", "commit", "-q", "-m", "release 2.0")
    release = git(src, "rev-parse", "HEAD").strip()
    git(src, "checkout", "-q", "main")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    return f"file://{bare}", main, release


def _recording_agent(server, name: str, runtime: str, out: Path) -> None:
    """A command agent that writes where it ran: real path, files there, git branch and HEAD."""
    script = (f'd={out}/$PREDICTORX_TASK_ID; mkdir -p "$d"; pwd -P > "$d/cwd"; ls > "$d/files"; '
              f'(git branch --show-current; git rev-parse HEAD) > "$d/git" 2>/dev/null; true')
    server.api("POST", "/api/agents", {**UNCONFINED, "name": name, "provider": "command", "runtime": runtime,
                                       "command": ["sh", "-c", script]})


def _run(server, project: dict, agent: str, out: Path) -> tuple[dict, dict]:
    issue = server.api("POST", "/api/issues", {"title": f"look around ({agent})", "project_id": project["id"],
                                               "assignee": agent})
    task = server.wait_task(server.runs(issue["number"])[0]["id"], timeout=60)
    assert task["status"] == "completed", task
    d = out / task["id"]
    lines = (d / "git").read_text().split() if (d / "git").exists() else []
    return task, {"cwd": Path((d / "cwd").read_text().strip()), "files": (d / "files").read_text().split(),
                  "git": lines}


def test_the_matching_daemon_runs_in_its_folder_the_other_in_a_repo_worktree(server, start_daemon, tmp_path):
    a, b = start_daemon("a"), start_daemon("b")
    url, main, _ = _remote(tmp_path)
    folder = tmp_path / "ann's checkout"
    folder.mkdir()
    (folder / "mine.txt").write_text("the person's own file\n")
    project = server.api("POST", "/api/projects", {"title": "Shop", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": url}},
        {"resource_type": "local_directory", "label": "ann's folder",
         "resource_ref": {"local_path": str(folder), "daemon_id": a.id}}]})
    out = tmp_path / "seen"
    _recording_agent(server, "on-a", a.id, out)
    _recording_agent(server, "on-b", b.id, out)

    on_a, seen_a = _run(server, project, "on-a", out)
    assert on_a["daemon_id"] == a.id
    assert seen_a["cwd"] == folder.resolve()  # the local directory wins over the github_repo
    assert "mine.txt" in seen_a["files"] and "app.py" not in seen_a["files"]
    assert seen_a["git"] == []  # a plain folder: no checkout of the repository was made for it

    on_b, seen_b = _run(server, project, "on-b", out)
    assert on_b["daemon_id"] == b.id
    assert seen_b["cwd"] != folder.resolve() and folder.resolve() not in seen_b["cwd"].parents
    assert "app.py" in seen_b["files"] and "mine.txt" not in seen_b["files"]
    assert seen_b["git"] == [f"agent/on-b/{on_b['id']}", main]  # a task branch of the repo's default
    b_context = json.dumps(server.api("GET", f"/api/tasks/{on_b['id']}"))
    assert str(folder) not in b_context


def test_ref_is_checked_out_and_the_branch_hint_never_switches(server, start_daemon, tmp_path):
    d = start_daemon()
    url, main, release = _remote(tmp_path)
    pinned = server.api("POST", "/api/projects", {"title": "Pinned", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": url, "ref": "release", "default_branch_hint": "main"}}]})
    hinted = server.api("POST", "/api/projects", {"title": "Hinted", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": url, "default_branch_hint": "release"}}]})
    out = tmp_path / "seen"
    _recording_agent(server, "bot", d.id, out)

    task, seen = _run(server, pinned, "bot", out)
    assert seen["git"] == [f"agent/bot/{task['id']}", release] and "release.txt" in seen["files"]
    task, seen = _run(server, hinted, "bot", out)
    assert seen["git"] == [f"agent/bot/{task['id']}", main] and "release.txt" not in seen["files"]
