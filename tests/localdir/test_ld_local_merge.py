"""Merging and discarding a task's branch in the person's repository (issue 22 §6), real git:
fast-forward, merge commit, refusals naming what is in the way, discard of the branch and its
kept folder, and an in-place run's commits named as its branch."""

from __future__ import annotations

from pathlib import Path

import pytest
from ld_git import git, make_repo

from predictorx.daemon import inplace, localmerge


def _task_branch(repo: Path, name: str, files: dict[str, str]) -> str:
    git(repo, "branch", name)
    wt = repo.parent / f"wt-{name.replace('/', '-')}"
    git(repo, "worktree", "add", "-q", str(wt), name)
    for rel, text in files.items():
        (wt / rel).write_text(text)
    git(wt, "add", "-A")
    git(wt, "commit", "-q", "-m", f"agent work on {name}")
    git(repo, "worktree", "remove", "--force", str(wt))
    return git(repo, "rev-parse", name).strip()


def test_fast_forward_when_the_persons_branch_has_not_moved(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    tip = _task_branch(repo, "agent/bot/t1", {"a.txt": "a2\n"})
    (repo / "b.txt").write_text("my unrelated edit\n")  # dirty, but not a file the branch changes
    out = localmerge.merge(repo, "agent/bot/t1", issue="#1", task_id="t1")
    assert out.how == "fast-forward" and out.into == "main" and out.sha == tip
    assert git(repo, "rev-parse", "HEAD").strip() == tip
    assert (repo / "a.txt").read_text() == "a2\n" and (repo / "b.txt").read_text() == "my unrelated edit\n"
    again = localmerge.merge(repo, "agent/bot/t1", issue="#1", task_id="t1")
    assert again.how == "already-merged"


def test_merge_commit_names_the_issue_and_task_when_the_branch_moved(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    tip = _task_branch(repo, "agent/bot/t2", {"a.txt": "a2\n"})
    (repo / "b.txt").write_text("b2\n")
    git(repo, "commit", "-qam", "my own work meanwhile")
    out = localmerge.merge(repo, "agent/bot/t2", issue="#7", task_id="t2")
    assert out.how == "merge-commit"
    parents = git(repo, "log", "-1", "--format=%P").split()
    assert len(parents) == 2 and parents[1] == tip
    assert "issue #7, task t2" in git(repo, "log", "-1", "--format=%s")
    assert (repo / "a.txt").read_text() == "a2\n" and (repo / "b.txt").read_text() == "b2\n"


@pytest.mark.parametrize("how", ["modified", "untracked", "staged"])
def test_a_dirty_working_tree_is_refused_naming_the_file(tmp_path: Path, how: str) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    _task_branch(repo, "agent/bot/t3", {"a.txt": "a2\n", "new.txt": "n\n"})
    head = git(repo, "rev-parse", "HEAD")
    if how == "modified":
        (repo / "a.txt").write_text("mine\n")
        named = "a.txt"
    elif how == "untracked":
        (repo / "new.txt").write_text("mine too\n")
        named = "new.txt"
    else:
        (repo / "other.txt").write_text("staged\n")
        git(repo, "add", "other.txt")
        named = "other.txt"
    with pytest.raises(localmerge.Refused, match=named.replace(".", r"\.")):
        localmerge.merge(repo, "agent/bot/t3", issue="#1", task_id="t3")
    assert git(repo, "rev-parse", "HEAD") == head  # nothing was merged


def test_a_conflict_is_refused_and_nothing_is_left_half_done(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    _task_branch(repo, "agent/bot/t4", {"a.txt": "theirs\n"})
    (repo / "a.txt").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(localmerge.Refused, match=r"conflicts .*a\.txt"):
        localmerge.merge(repo, "agent/bot/t4", issue="#1", task_id="t4")
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "status", "--porcelain") == ""


def test_detached_head_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    _task_branch(repo, "agent/bot/t5", {"a.txt": "a2\n"})
    git(repo, "checkout", "-q", "--detach")
    with pytest.raises(localmerge.Refused, match="detached HEAD"):
        localmerge.merge(repo, "agent/bot/t5", issue="#1", task_id="t5")


def test_discard_deletes_the_branch_and_the_kept_folder_only_inside_the_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    tip = _task_branch(repo, "agent/bot/t6", {"a.txt": "a2\n"})
    root = tmp_path / "workspaces"
    kept = root / "ws" / "t6" / "workdir"
    kept.mkdir(parents=True)
    outside = tmp_path / "not-ours"
    outside.mkdir()
    with pytest.raises(localmerge.Refused, match="moved"):
        localmerge.discard(repo, "agent/bot/t6", expected="0" * 40, kept_folder=kept, kept_root=root)
    out = localmerge.discard(repo, "agent/bot/t6", expected=tip, kept_folder=kept, kept_root=root)
    assert out.how == "deleted" and out.sha == tip
    assert git(repo, "branch", "--list", "agent/bot/t6") == "" and not kept.exists()
    tip2 = _task_branch(repo, "agent/bot/t7", {"a.txt": "a3\n"})
    localmerge.discard(repo, "agent/bot/t7", expected=tip2, kept_folder=outside, kept_root=root)
    assert outside.is_dir()  # a folder outside the daemon's root is never removed


def test_in_place_commits_are_named_and_discard_never_rewrites_the_persons_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    begun = inplace.start(repo)
    assert begun is not None
    assert inplace.record(begun, "bot", "t8") is None  # no commit of the agent's: no branch
    (repo / "a.txt").write_text("agent\n")
    git(repo, "commit", "-qam", "the agent's commit, in place")
    branch = inplace.record(begun, "bot", "t8")
    assert branch == "agent/bot/t8"
    head = git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "rev-parse", branch).strip() == head
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "main"  # nothing switched
    assert localmerge.merge(repo, branch, issue="#1", task_id="t8").how == "already-merged"
    out = localmerge.discard(repo, branch, expected=head, start=begun.head)
    assert "git reset --keep" in out.message and git(repo, "rev-parse", "HEAD").strip() == head


def test_origin_url_never_carries_a_credential(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "remote", "add", "origin", "https://bot:s3cret@forge.example/o/r.git")
    assert inplace.origin_url(repo) == "https://forge.example/o/r.git"
