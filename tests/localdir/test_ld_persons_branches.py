"""Worktree mode never moves or rewrites one of the person's branches, even when the agent
switched its worktree to one (R-WT-3, R-WT-4) — real repositories, never a mocked git."""

from __future__ import annotations

from pathlib import Path

from ld_git import git, make_repo

from predictorx.daemon.worktree import finalize, prepare


def rev(repo: Path, what: str) -> str:
    return git(repo, "rev-parse", "--verify", "-q", what, check=False).strip()


def test_leftovers_never_move_a_persons_branch_the_agent_switched_to(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "feature")  # the person's branch, at the task's baseline, not checked out anywhere
    feature = rev(repo, "feature")
    p = prepare(repo, tmp_path / "env", "claude", "t")
    git(p.worktree_dir, "checkout", "-q", "feature")
    (p.worktree_dir / "left.txt").write_text("left uncommitted\n")
    result = finalize(p)
    assert rev(repo, "feature") == feature  # never moved
    assert result.error is None and not result.kept_worktree
    assert result.branch == p.branch and len(result.commits) == 1
    assert git(repo, "show", f"{p.branch}:left.txt") == "left uncommitted\n"
    assert not p.worktree_dir.exists()


def test_leftovers_on_a_diverged_branch_of_the_person_keep_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "commit", "-q", "--allow-empty", "-m", "the person's feature work")
    git(repo, "checkout", "-q", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "main moves on: feature and the task's baseline diverge")
    feature = rev(repo, "feature")
    p = prepare(repo, tmp_path / "env", "claude", "t")
    git(p.worktree_dir, "checkout", "-q", "feature")
    (p.worktree_dir / "left.txt").write_text("left uncommitted\n")
    result = finalize(p)
    assert rev(repo, "feature") == feature  # never moved, never rewritten
    assert rev(repo, p.branch) == p.baseline_commit
    assert result.kept_worktree and result.error and "feature" in result.error
    assert str(p.worktree_dir) in result.error and f"git -C {p.worktree_dir} status" in result.error
    head = rev(repo, "refs/predictorx/kept/t")
    assert git(repo, "show", f"{head}:left.txt") == "left uncommitted\n"  # committed, not lost
    assert rev(repo, f"{head}^") == feature


def test_the_agents_own_commits_on_a_branch_it_switched_to_are_brought_over(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "feature")
    p = prepare(repo, tmp_path / "env", "claude", "t")
    git(p.worktree_dir, "checkout", "-q", "feature")
    git(p.worktree_dir, "commit", "-q", "--allow-empty", "-m", "the agent committed here itself")
    before, moved = rev(repo, "feature"), rev(p.worktree_dir, "feature")
    result = finalize(p)
    # The agent's `feature` was its own copy: the person's never moves; the task's branch gets the work.
    assert result.error is None and rev(repo, "feature") == before
    assert rev(repo, p.branch) == moved
