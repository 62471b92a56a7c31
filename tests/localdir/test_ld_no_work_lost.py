"""No commit of an agent is ever lost: worktree mode with garbage collection and recovery, on real
repositories (R-WT-4, R-LD-6)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from ld_git import git, make_repo

from predictorx.daemon.envroot import create_env_root, mark_finished
from predictorx.daemon.gc import collect
from predictorx.daemon.worktree import MARKER, finalize, prepare, recover

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
LONG_AGO = NOW - timedelta(days=30)


def rev(repo: Path, what: str) -> str:
    return git(repo, "rev-parse", "--verify", "-q", what, check=False).strip()


def branches_containing(repo: Path, sha: str) -> list[str]:
    return git(repo, "for-each-ref", "--contains", sha, "--format=%(refname)", "refs/heads/").split()


def task_env(root: Path, repo: Path, task: str):
    """The env root the daemon makes for a worktree-mode task (runner: create, then empty workdir/ goes)."""
    env = create_env_root(root, "acme", task, workdir_kind="worktree", local_path=repo, now=LONG_AGO)
    env.workdir.rmdir()
    return env


# --- 1. GC never removes a worktree that finalize kept; no removal strands a commit --------------

def test_gc_keeps_a_worktree_finalize_kept_and_its_commit_survives(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    root = tmp_path / "ws"
    env = task_env(root, repo, "t1")
    p = prepare(repo, env.path, "claude", "t1")
    git(p.worktree_dir, "checkout", "-q", "--detach", "HEAD~1")  # off the task's line of history
    (p.worktree_dir / "f.txt").write_text("precious\n")
    git(p.worktree_dir, "add", "f.txt")
    git(p.worktree_dir, "commit", "-qm", "the agent's work, off its branch")
    sha = rev(p.worktree_dir, "HEAD")
    result = finalize(p)
    assert result.kept_worktree and result.error
    assert rev(repo, "refs/predictorx/kept/t1") == sha and "refs/predictorx/kept/t1" in result.error
    assert git(p.worktree_dir, "status", "--porcelain") == ""  # clean: only the marker protects it
    mark_finished(env, now=LONG_AGO)

    report = collect(root, NOW)
    assert report.removed_env_roots == []
    reason = report.reason_kept(env.path)
    assert reason and "kept" in reason and str(p.worktree_dir) in reason
    assert p.worktree_dir.exists() and rev(p.worktree_dir, "HEAD") == sha
    assert git(repo, "show", f"{sha}:f.txt") == "precious\n"
    assert f"kept {env.path}" in report.summary()


@pytest.mark.parametrize("state", ["preparing", "ready", "something new", None])
def test_gc_keeps_an_env_root_with_any_worktree_record(tmp_path: Path, state: str | None) -> None:
    repo = make_repo(tmp_path / "repo")
    root = tmp_path / "ws"
    env = task_env(root, repo, "t1")
    p = prepare(repo, env.path, "claude", "t1")
    marker = env.path / MARKER
    if state is None:
        marker.write_text("{half a reco")  # unreadable: still not ours to delete
    else:
        record = json.loads(marker.read_text())
        record["state"] = state
        marker.write_text(json.dumps(record))
    mark_finished(env, now=LONG_AGO)
    report = collect(root, NOW)
    assert report.removed_env_roots == [] and p.worktree_dir.exists()
    assert MARKER in report.reason_kept(env.path)


def test_gc_anchors_an_unbranched_head_before_removing_a_worktree(tmp_path: Path) -> None:
    """A worktree without a record (made by an older version, or its record deleted): clean, but its
    HEAD commit is on no branch. GC may remove it only after a ref holds the commit."""
    repo = make_repo(tmp_path / "repo")
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "t/1", workdir_kind="worktree", local_path=repo, now=LONG_AGO)
    env.workdir.rmdir()
    git(repo, "worktree", "add", "-q", "--detach", str(env.workdir))
    (env.workdir / "g.txt").write_text("work\n")
    git(env.workdir, "add", "g.txt")
    git(env.workdir, "commit", "-qm", "detached work")
    sha = rev(env.workdir, "HEAD")
    mark_finished(env, now=LONG_AGO)

    report = collect(root, NOW)
    assert report.removed_env_roots == [env.path]
    refs = git(repo, "for-each-ref", "--points-at", sha, "--format=%(refname)", "refs/predictorx/kept/").split()
    assert refs == ["refs/predictorx/kept/t-1"]
    assert git(repo, "show", f"{sha}:g.txt") == "work\n"
    assert "refs/predictorx/kept/t-1" in report.summary() and sha[:12] in report.summary()


def test_gc_does_not_anchor_what_a_branch_holds(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "t1", workdir_kind="worktree", local_path=repo, now=LONG_AGO)
    env.workdir.rmdir()
    git(repo, "worktree", "add", "-q", "--detach", str(env.workdir))  # at main's tip
    mark_finished(env, now=LONG_AGO)
    report = collect(root, NOW)
    assert report.removed_env_roots == [env.path]
    assert git(repo, "for-each-ref", "refs/predictorx/") == ""


def test_work_kept_off_the_branch_never_overwrites_earlier_kept_work(tmp_path: Path) -> None:
    """Work that does not build on the task's branch is kept in the person's repository under
    refs/predictorx/kept/<task>; a second such run of the same task gets `-2`."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    shas = []
    for i in range(2):
        p = prepare(repo, tmp_path / f"env{i}", "claude", "same-task")
        git(p.worktree_dir, "checkout", "-q", "--detach", "HEAD~1")
        git(p.worktree_dir, "commit", "-q", "--allow-empty", "-m", f"stray {i}")
        shas.append(rev(p.worktree_dir, "HEAD"))
        assert finalize(p).kept_worktree
    assert rev(repo, "refs/predictorx/kept/same-task") == shas[0]
    assert rev(repo, "refs/predictorx/kept/same-task-2") == shas[1]


def test_recover_removes_a_half_made_checkout(tmp_path: Path) -> None:
    """The agent never ran in a checkout still being prepared: recover takes it and its branch back."""
    repo = make_repo(tmp_path / "repo")
    p = prepare(repo, tmp_path / "envs" / "t3", "claude", "t3")
    marker = p.env_root / MARKER
    record = json.loads(marker.read_text())
    record["state"] = "preparing"
    record["pid"] = -1  # its maker is gone
    marker.write_text(json.dumps(record))
    said = recover([tmp_path / "envs"])
    assert not p.worktree_dir.exists() and not marker.exists()
    assert rev(repo, p.branch) == "" and "half-made" in said[0]
