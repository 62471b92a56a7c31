"""Red team of the sandbox (issue 29): GC ran git in a "linked worktree" an agent made.

GC treats a folder of an env root whose `.git` is a *file* as an older daemon's linked worktree
and runs git there (`status`, `rev-parse`, `for-each-ref`, `update-ref`, `worktree remove`) to
keep its uncommitted work and unbranched commits. An agent writes that file itself, in its
workdir, naming a git dir it made (`gitdir: …/evil.git`) whose hooks (`post-index-change`, run
when `status` refreshes the index; `reference-transaction`, run by `update-ref`), `core.hooksPath`
or `include.path` are the agent's: once the task's env root expired, GC ran the agent's program as
the daemon, outside the sandbox. A `.git` file counts as a linked worktree only when the
repository it names lists it back (gitdata.repository_dirs); anything else is the run's own and
GC runs no git in it.
"""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from predictorx.daemon.envroot import create_env_root, mark_finished
from predictorx.daemon.gc import collect

NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
OLD = NOW - timedelta(days=30)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _commit(cwd: Path, message: str) -> None:
    _git(cwd, "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-q", "-m", message)


@pytest.mark.parametrize("linked_back", [False, True], ids=["plain", "listed-back"])
def test_gc_runs_nothing_of_a_worktree_the_agent_made(tmp_path: Path, linked_back: bool) -> None:
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "t1", now=OLD - timedelta(hours=1))
    mark_finished(env, now=OLD, status="completed")
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    evil.chmod(0o755)
    # The agent, in its workdir: a repository whose git dir lies beside it, named by a `.git`
    # file, holding a nested repository (a submodule, to `git status`) whose own config has a
    # filter driver GC's switches do not know of, and a file whose stat data changed.
    work = env.workdir / "evil"
    sub = work / "sub"
    sub.mkdir(parents=True)
    _git(work, "init", "-q", "-b", "main")
    _git(sub, "init", "-q", "-b", "main")
    (sub / ".gitattributes").write_text("* filter=agent\n")
    (sub / "f.txt").write_text("hi\n")
    _git(sub, "add", ".")
    _commit(sub, "sub")
    _git(sub, "config", "filter.agent.clean", str(evil))
    _git(work, "add", "sub")
    _commit(work, "top")
    os.utime(sub / "f.txt", (0, 0))
    git_dir = env.workdir / "evil.git"
    (work / ".git").rename(git_dir)
    if linked_back:  # as `git worktree add` would leave it: the repository lists the worktree
        linked = git_dir / "worktrees" / "evil"
        linked.mkdir(parents=True)
        for name in ("HEAD", "index"):
            (git_dir / name).rename(linked / name)
        (git_dir / "HEAD").write_text((linked / "HEAD").read_text())
        (linked / "commondir").write_text("../..\n")
        (linked / "gitdir").write_text(f"{work / '.git'}\n")
        git_dir = linked
    (work / ".git").write_text(f"gitdir: {git_dir}\n")
    collect(root, NOW)
    assert not marker.exists(), marker.read_text()
