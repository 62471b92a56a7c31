"""The repo cache and the sandbox (issue 29 findings 1 and 4), with a real daemon and real bwrap.

A sandboxed run sees the caches of the repositories its task allows, read-only, and nothing else
of `.repos/`: not another workspace's cache on the same machine, and no cache it could write (its
config was what the daemon's next fetch ran). `predictorx repo checkout` still works inside —
the checkout is a repository of the run's own — and the agent's commits and leftovers reach the
cache when the run ends.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from predictorx.daemon.repocache import RepoCache

from .harness import git, make_repo, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")


def _bare(tmp_path: Path, name: str, files: dict[str, str]) -> str:
    src = make_repo(tmp_path / f"{name}-src", files)
    bare = tmp_path / f"{name}.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    return f"file://{bare}"


def test_a_sandboxed_run_sees_only_its_allowed_caches_read_only_and_its_checkout_is_delivered(
        server, start_daemon, tmp_path):
    ours = _bare(tmp_path, "ours", {"lib.py": "VALUE = 1\n"})
    theirs = _bare(tmp_path, "theirs", {"secret.txt": "workspace B's private plan\n"})
    root = tmp_path / "ws"
    ws = server.api("GET", "/api/workspaces")[0]
    ours_cache = RepoCache(root).for_workspace(ws["id"]).ensure(ours)
    workspace_b = RepoCache(root).for_workspace("workspace-b")
    theirs_cache = workspace_b.ensure(theirs)  # workspace B's task ran on this machine earlier
    ours_in_b = workspace_b.ensure(ours)  # …also on our repository: its cache holds B's work
    server.api("PATCH", f"/api/workspaces/{ws['id']}", {"repos": [ours]})
    start_daemon(PREDICTORX_WORKSPACES_ROOT=str(root))
    probes = {
        "their cache readable": f"ls {theirs_cache}/ || cat {theirs_cache}/HEAD",
        "their objects readable": f"ls {theirs_cache}/objects/",
        "their cache of our repository readable": f"ls {ours_in_b}/objects/",
        "our cache writable": f"touch {ours_cache}/written",
        "our cache config writable": f"git config --file {ours_cache}/config core.gitProxy /bin/false",
        "our alternates writable": f"mkdir -p {ours_cache}/objects/info && echo /tmp > {ours_cache}/objects/info/alternates",
    }
    lines = [": > $PREDICTORX_OUTPUT_DIR/probe.txt"]
    for name, cmd in probes.items():
        lines.append(f"if ( {cmd} ) >/dev/null 2>&1; then echo '{name}: yes'; else echo '{name}: no'; fi "
                     ">> $PREDICTORX_OUTPUT_DIR/probe.txt")
    lines += [
        f"touch {root}/.repos/new-cache 2>/dev/null",  # lands in the sandbox's own empty root, if anywhere
        f"co=$(predictorx repo checkout {ours}) || exit 3",
        'cd "$co" && echo "VALUE = 2" > lib.py && git -c user.name=a -c user.email=a@x commit -qam "agent commit"',
        'echo "left over" > notes.txt',
        "cat $PREDICTORX_OUTPUT_DIR/probe.txt",
    ]
    script = tmp_path / "agent.sh"
    script.write_text("\n".join(lines) + "\n")
    server.api("POST", "/api/agents", {"name": "boxed", "provider": "command", "sandbox": True,
                                       "command": ["sh", str(script)]})
    issue = server.api("POST", "/api/issues", {"title": "Use the lib", "assignee": "boxed"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task
    text = json.dumps(server.api("GET", f"/api/tasks/{task['id']}/messages"))
    for name in probes:
        assert f"{name}: no" in text, text
    assert not (ours_cache / "written").exists() and "gitProxy" not in (ours_cache / "config").read_text()
    assert not (root / ".repos" / "new-cache").exists()
    # The agent's commit and its leftover file are on its branch in the cache.
    branch = wait_until(lambda: git(tmp_path, "--git-dir", str(ours_cache), "for-each-ref", "--format=%(refname:short)",
                                    "refs/heads/agent/boxed/").split(), what="the delivered branch")[0]
    assert git(tmp_path, "--git-dir", str(ours_cache), "show", f"{branch}:lib.py") == "VALUE = 2\n"
    assert git(tmp_path, "--git-dir", str(ours_cache), "show", f"{branch}:notes.txt") == "left over\n"
    assert "agent commit" in git(tmp_path, "--git-dir", str(ours_cache), "log", "--format=%s", branch)


def test_a_sandboxed_worktree_run_cannot_write_the_persons_git_dir_yet_its_work_arrives(
        server, start_daemon, tmp_path):
    """Worktree mode: the run's checkout borrows the person's objects read-only; their `.git` —
    config, hooks, refs, which their own next git command (and the daemon's next baseline) read —
    is out of its reach, and its commits and leftovers still reach the task's branch."""
    daemon = start_daemon(PREDICTORX_WORKSPACES_ROOT=str(tmp_path / "ws"))
    folder = make_repo(tmp_path / "mine", {"README.md": "# mine\n"})
    dot = folder / ".git"
    probes = {
        "config writable": f"git config --file {dot}/config core.fsmonitor /bin/false",
        "hooks writable": f"mkdir -p {dot}/hooks && echo 'exit 0' > {dot}/hooks/pre-commit",
        "refs writable": f"echo 0000000000000000000000000000000000000000 > {dot}/refs/heads/main",
        "objects writable": f"touch {dot}/objects/planted",
    }
    lines = []
    for name, cmd in probes.items():
        lines.append(f"if ( {cmd} ) >/dev/null 2>&1; then echo '{name}: yes'; else echo '{name}: no'; fi")
    lines += ["echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@x commit -qm 'boxed work'",
              "echo left > left.txt"]
    script = tmp_path / "agent.sh"
    script.write_text("\n".join(lines) + "\n")
    server.api("POST", "/api/agents", {"name": "boxed", "provider": "command", "sandbox": True,
                                       "command": ["sh", str(script)]})
    project = server.api("POST", "/api/projects", {"title": "Mine", "resources": [{
        "resource_type": "local_directory", "label": "my checkout",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "worktree"}}]})
    issue = server.api("POST", "/api/issues", {"title": "Try", "project_id": project["id"], "assignee": "boxed"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task
    text = json.dumps(server.api("GET", f"/api/tasks/{task['id']}/messages"))
    assert "objects writable: no" in text, text  # mounted, read-only
    # The rest is not there at all: what the agent wrote landed in its sandbox's own empty root.
    assert "fsmonitor" not in (dot / "config").read_text() and not (dot / "objects" / "planted").exists()
    assert not (dot / "hooks" / "pre-commit").exists() and git(folder, "rev-parse", "main").strip() != "0" * 40
    assert git(folder, "show", f"{task['branch_name']}:work.txt") == "work\n"
    assert git(folder, "show", f"{task['branch_name']}:left.txt") == "left\n"
    assert "boxed work" in git(folder, "log", "--format=%s", task["branch_name"])
