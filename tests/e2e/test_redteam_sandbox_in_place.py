"""Red team of the sandbox (issue 29): an in-place run's `.git` names the next run's writable mounts.

For an `in_place` folder the sandbox mounts the person's folder and "its git dirs" writable, and
the daemon asked the folder's own git which those are (`git rev-parse --git-dir --git-common-dir`).
But the folder's `.git` is the agent's to write: a first run wrote `.git/commondir` (or replaced
`.git` with a `gitdir:` file or a symlink) naming another repository of the daemon's user — another
of the person's repositories, or a repository cache of the daemon (`.repos/ws-<id>/…`, whose config
the daemon's own fetch reads) — and the next in-place run of that folder got it mounted writable.
Now a git dir is mounted only when it is the folder's own `.git` folder, or a linked worktree's
git dir that its repository lists as belonging to that folder.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from predictorx.daemon import sandbox

from .harness import git, make_repo, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.git"
    subprocess.run(["git", "init", "-q", "--bare", str(victim)], check=True, timeout=30)
    return victim


@pytest.mark.parametrize("plant", [
    'echo "$VICTIM" > .git/commondir',
    'rm -rf .git && echo "gitdir: $VICTIM" > .git',
    'rm -rf .git && ln -s "$VICTIM" .git',
])
def test_git_dirs_of_a_folder_never_follow_what_its_dot_git_names_elsewhere(tmp_path, plant):
    victim = _victim(tmp_path)
    folder = make_repo(tmp_path / "mine")
    subprocess.run(["sh", "-c", plant], cwd=folder, env={"VICTIM": str(victim), "PATH": "/usr/bin:/bin"},
                   check=True, timeout=30)
    found = [Path(p).resolve() for p in sandbox.git_dirs(folder)]
    assert victim.resolve() not in found, found


def test_a_linked_worktree_in_place_still_gets_its_own_git_dirs(tmp_path):
    main = make_repo(tmp_path / "main")
    git(main, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    found = {Path(p).resolve() for p in sandbox.git_dirs(tmp_path / "side")}
    assert found == {(main / ".git" / "worktrees" / "side").resolve(), (main / ".git").resolve()}, found
    assert {Path(p).resolve() for p in sandbox.git_dirs(main)} == {(main / ".git").resolve()}


def test_an_in_place_run_cannot_make_the_next_one_mount_another_repository_writable(server, start_daemon, tmp_path):
    daemon = start_daemon()
    victim = _victim(tmp_path)
    folder = make_repo(tmp_path / "mine")
    script = tmp_path / "plant.sh"
    # Each run: if the victim is writable, prove it; then plant the pointer for the next run.
    script.write_text(f"VICTIM='{victim}'\n"
                      'if touch "$VICTIM/hooks/pwned" 2>/dev/null; then echo PWNED; else echo victim-unreachable; fi\n'
                      'echo "$VICTIM" > .git/commondir\n')
    server.api("POST", "/api/agents", {"name": "planter", "provider": "command", "command": ["sh", str(script)]})
    project = server.api("POST", "/api/projects", {"title": "Mine", "resources": [{
        "resource_type": "local_directory", "label": "my folder",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "in_place"}}]})
    for attempt in range(2):
        issue = server.api("POST", "/api/issues", {"title": f"Plant {attempt}", "project_id": project["id"],
                                                   "assignee": "planter"})
        number = issue["number"]
        server.wait_task(wait_until(lambda n=number: server.runs(n), what="a task")[0]["id"], timeout=60)
    assert not (victim / "hooks" / "pwned").exists()
