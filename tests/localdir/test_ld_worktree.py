"""Worktree mode (R-WT-1 … R-WT-7) on real repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ld_git import git, make_repo, snapshot, tree_files

from predictorx.daemon.branches import task_branch as branch_name
from predictorx.daemon.worktree import (
    MARKER, Prepared, WorktreeError, finalize, prepare,
)


def visible_files(repo: Path) -> dict[str, bytes]:
    """What the person sees in their folder, minus what git ignores."""
    ignored = set(git(repo, "ls-files", "--others", "--ignored", "--exclude-standard").split("\n"))
    return {k: v for k, v in tree_files(repo).items() if k not in ignored}


def branches(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()


def changed_files(repo: Path, a: str, b: str) -> list[str]:
    return git(repo, "diff", "--name-only", a, b).split()


# --- prepare: reproduce exactly what the person sees, touching nothing -----------------------------

def test_the_worktree_starts_from_what_the_person_sees(dirty_repo: Path, tmp_path: Path) -> None:
    """R-WT-2: tracked changes and untracked, not ignored files are reproduced, on top of a baseline
    commit of the person's dirty state (a child of HEAD), so it is not taken for the agent's work."""
    before = snapshot(dirty_repo)
    p = prepare(dirty_repo, tmp_path / "env", "claude", "task-1")
    assert snapshot(dirty_repo) == before  # status, index bytes, stash list, HEAD
    assert tree_files(p.worktree_dir) == visible_files(dirty_repo)
    assert not (p.worktree_dir / "build").exists() and not (p.worktree_dir / "debug.log").exists()
    assert os.access(p.worktree_dir / "run.sh", os.X_OK)
    assert p.base_commit == before[3].strip()
    assert git(dirty_repo, "rev-parse", f"{p.baseline_commit}^") == before[3]
    assert p.branch == "agent/claude/task-1"
    assert git(dirty_repo, "rev-parse", p.branch).strip() == p.baseline_commit
    assert git(p.worktree_dir, "status", "--porcelain") == ""
    assert (p.worktree_dir / ".git").is_dir()  # a repository of its own, not a linked worktree
    assert str(p.worktree_dir) not in git(dirty_repo, "worktree", "list")
    assert p.worktree_dir == (tmp_path / "env" / "workdir").resolve()
    result = finalize(p)
    assert snapshot(dirty_repo) == before
    assert result.branch is None and result.error is None


def test_a_clean_repository_needs_no_baseline_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    p = prepare(repo, tmp_path / "env", "codex", "t")
    assert p.baseline_commit == p.base_commit == git(repo, "rev-parse", "HEAD").strip()
    finalize(p)


def test_a_sub_folder_resource_starts_in_the_same_sub_folder(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"game/engine/main.c": "int main;\n", "README": "r\n"})
    p = prepare(repo / "game" / "engine", tmp_path / "env", "claude", "t")
    assert p.start_dir == p.worktree_dir / "game" / "engine"
    assert (p.start_dir / "main.c").read_text() == "int main;\n"
    assert p.repo_dir == repo.resolve()
    finalize(p)


def test_a_symlinked_resource_path_is_followed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (tmp_path / "link").symlink_to(repo)
    p = prepare(tmp_path / "link", tmp_path / "env", "claude", "t")
    assert p.repo_dir == repo.resolve()
    finalize(p)


# --- prepare: refuse rather than start from a tree the person would not recognise ----------------

def test_not_a_repository_fails_and_leaves_the_folder_alone(tmp_path: Path) -> None:
    # R-WT-6: an explicit error, never a fallback to running in place
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "f.txt").write_text("x")
    with pytest.raises(WorktreeError, match="not inside a git repository.*never falls back"):
        prepare(tmp_path / "plain", tmp_path / "env", "claude", "t")
    assert os.listdir(tmp_path / "plain") == ["f.txt"]


def test_a_repository_without_commits_fails(tmp_path: Path) -> None:
    # R-WT-6: at least one commit is needed
    (tmp_path / "fresh").mkdir()
    git(tmp_path / "fresh", "init", "-q")
    (tmp_path / "fresh" / "f.txt").write_text("x")
    with pytest.raises(WorktreeError, match="no commit yet.*never falls back"):
        prepare(tmp_path / "fresh", tmp_path / "env", "claude", "t")
    assert not (tmp_path / "env" / "workdir").exists()


def test_too_many_untracked_files_fail_with_advice(tmp_path: Path) -> None:
    """R-WT-2: over the untracked-files limit the task fails with advice (the limit is a parameter;
    the default 2,000 is test_the_default_limit_is_2000_untracked_files)."""
    repo = make_repo(tmp_path / "repo")
    for i in range(6):
        (repo / f"out{i}.o").write_text("x")
    before = snapshot(repo)
    with pytest.raises(WorktreeError, match=r"6 untracked files.*at most 5.*\.gitignore"):
        prepare(repo, tmp_path / "env", "claude", "t", max_untracked_files=5)
    assert snapshot(repo) == before and branches(repo) == ["main"]
    prepare(repo, tmp_path / "env2", "claude", "t", max_untracked_files=6)  # at the limit is fine


def test_untracked_content_over_200_mib_fails(tmp_path: Path) -> None:
    """R-WT-2: the default size limit is 200 MiB of untracked content."""
    repo = make_repo(tmp_path / "repo")
    with open(repo / "huge.bin", "wb") as f:  # sparse: 201 MiB on paper, nothing on disk
        f.truncate(201 * 1024 * 1024)
    with pytest.raises(WorktreeError, match=r"larger than 200 MiB.*gitignore"):
        prepare(repo, tmp_path / "env", "claude", "t")
    assert branches(repo) == ["main"]


def test_an_untracked_symlink_fails(tmp_path: Path) -> None:
    """R-WT-2: a symlink cannot be reproduced faithfully: refused with advice, never run."""
    repo = make_repo(tmp_path / "repo")
    (repo / "latest").symlink_to("/etc/hostname")
    with pytest.raises(WorktreeError, match="latest.*symlink.*gitignore"):
        prepare(repo, tmp_path / "env", "claude", "t")


def test_the_default_limit_is_2000_untracked_files(tmp_path: Path) -> None:
    """R-WT-2: 2,000 untracked files are reproduced; 2,001 fail with advice and touch nothing."""
    repo = make_repo(tmp_path / "repo")
    (repo / "out").mkdir()
    for i in range(2001):
        (repo / "out" / f"{i}.o").write_text(f"{i}\n")
    before = snapshot(repo)
    with pytest.raises(WorktreeError, match=r"2,001 untracked files.*at most 2,000.*\.gitignore"):
        prepare(repo, tmp_path / "env", "claude", "t")
    assert snapshot(repo) == before and branches(repo) == ["main"]
    (repo / "out" / "2000.o").unlink()
    p = prepare(repo, tmp_path / "env2", "claude", "t")
    assert len(os.listdir(p.worktree_dir / "out")) == 2000
    assert (p.worktree_dir / "out" / "1999.o").read_text() == "1999\n"
    finalize(p)


@pytest.mark.parametrize("when", ["before it is looked at", "before it is hashed"])
def test_a_file_that_vanishes_while_the_task_starts_fails(tmp_path: Path, monkeypatch, when: str) -> None:
    """R-WT-2: an untracked file deleted between git listing it and the baseline being written (a
    build cleaning up) means the state cannot be reproduced: the task fails with advice. The race
    is made real by deleting the file right after `ls-files` / right before `update-index` run."""
    from predictorx.daemon import worktree

    repo = make_repo(tmp_path / "repo")
    (repo / "keep.txt").write_text("stays\n")
    (repo / "tmp.o").write_text("short-lived\n")
    real_git = worktree.git

    def racing_git(args, **kw):
        if when == "before it is hashed" and args[0] == "update-index" and (repo / "tmp.o").exists():
            (repo / "tmp.o").unlink()
        out = real_git(args, **kw)
        if when == "before it is looked at" and args[:3] == ["ls-files", "-z", "--others"]:
            (repo / "tmp.o").unlink()
        return out

    monkeypatch.setattr(worktree, "git", racing_git)
    with pytest.raises(WorktreeError, match=r"tmp\.o.*vanished|vanished.*tmp\.o") as e:
        prepare(repo, tmp_path / "env", "claude", "t")
    assert "cannot be reproduced faithfully" in str(e.value) and ".gitignore" in str(e.value)
    assert branches(repo) == ["main"] and str(tmp_path / "env") not in git(repo, "worktree", "list")
    assert (repo / "keep.txt").read_text() == "stays\n"


def test_an_untracked_nested_repository_fails(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    make_repo(repo / "vendor" / "lib")
    with pytest.raises(WorktreeError, match="nested git repository"):
        prepare(repo, tmp_path / "env", "claude", "t")


def test_an_env_root_inside_the_repository_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(WorktreeError, match="inside the repository"):
        prepare(repo, repo / "envs" / "t", "claude", "t")


# --- branches --------------------------------------------------------------------------------------

def test_branch_names_are_sanitised() -> None:
    assert branch_name("Claude Code", "T-42") == "agent/Claude-Code/T-42"
    assert branch_name("../evil~^:?*[\\", "x.lock") == "agent/evil/x"
    assert branch_name("", "") == "agent/agent/task"
    assert branch_name("코더", "태스크") == "agent/코더/태스크"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_every_branch_name_is_a_valid_git_ref(agent: str, task: str) -> None:
    name = branch_name(agent, task)
    assert name.startswith("agent/")
    r = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True)
    assert r.returncode == 0, name


def test_branch_collisions_get_a_suffix(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    a = prepare(repo, tmp_path / "e1", "claude", "t")
    b = prepare(repo, tmp_path / "e2", "claude", "t")
    assert (a.branch, b.branch) == ("agent/claude/t", "agent/claude/t-2")
    repo2 = make_repo(tmp_path / "repo2")
    git(repo2, "branch", "agent")  # a branch where our folder of branches would be
    c = prepare(repo2, tmp_path / "e3", "claude", "t")
    assert c.branch == "agent-claude-t"
    for p in (a, b, c):
        finalize(p)


# --- finalize ----------------------------------------------------------------------------------------

def test_a_task_that_changed_nothing_leaves_nothing(dirty_repo: Path, tmp_path: Path) -> None:
    p = prepare(dirty_repo, tmp_path / "env", "claude", "t")
    result = finalize(p)
    assert result.branch is None and result.commits == () and not result.kept_worktree
    assert "deleted" in result.message
    assert branches(dirty_repo) == ["main"]
    assert not p.worktree_dir.exists()
    assert str(p.worktree_dir) not in git(dirty_repo, "worktree", "list")
    assert not (p.env_root / MARKER).exists()


def test_leftovers_are_committed_and_the_branch_kept(dirty_repo: Path, tmp_path: Path) -> None:
    before = snapshot(dirty_repo)
    p = prepare(dirty_repo, tmp_path / "env", "claude", "t")
    (p.worktree_dir / "src" / "app.py").write_text("print('agent')\n")
    git(p.worktree_dir, "commit", "-qam", "agent's own commit")
    (p.worktree_dir / "NEW.md").write_text("left uncommitted\n")
    (p.worktree_dir / "docs" / "guide.md").unlink()
    (p.worktree_dir / "build").mkdir()
    (p.worktree_dir / "build" / "x.o").write_text("ignored build output")
    result = finalize(p)
    assert result.error is None and not result.kept_worktree
    assert result.branch == p.branch and len(result.commits) == 2
    assert git(dirty_repo, "rev-parse", p.branch).strip() == result.commits[-1]
    assert sorted(changed_files(dirty_repo, p.baseline_commit, p.branch)) == ["NEW.md", "docs/guide.md", "src/app.py"]
    assert "agent" in git(dirty_repo, "log", "-1", "--format=%an", p.branch).lower()
    assert not p.worktree_dir.exists()
    assert snapshot(dirty_repo) == before
    assert p.branch in branches(dirty_repo)


def test_a_commit_that_cannot_be_made_keeps_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    p = prepare(repo, tmp_path / "env", "claude", "t")
    (p.worktree_dir / "work.txt").write_text("precious\n")
    # The person checked the task's branch out in their folder: git refuses to move it there.
    # (Signing cannot make it fail: the daemon's own commits never sign.)
    git(repo, "checkout", "-q", p.branch)
    result = finalize(p)
    assert result.kept_worktree and result.error
    assert str(p.worktree_dir) in result.error and f"git -C {p.worktree_dir} status" in result.error
    assert (p.worktree_dir / "work.txt").read_text() == "precious\n"
    assert p.branch in branches(repo)
    assert (p.env_root / MARKER).exists()  # a restarted daemon tries again


def test_work_on_another_branch_of_the_agent_is_brought_onto_the_task_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    p = prepare(repo, tmp_path / "env", "claude", "t")
    git(p.worktree_dir, "checkout", "-q", "-b", "agent-chose-this")
    (p.worktree_dir / "f.txt").write_text("x\n")
    git(p.worktree_dir, "add", "f.txt")
    git(p.worktree_dir, "commit", "-qm", "work elsewhere")
    result = finalize(p)
    assert result.branch == p.branch and len(result.commits) == 1
    assert changed_files(repo, p.baseline_commit, p.branch) == ["f.txt"]


def test_finalize_after_the_worktree_vanished(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    p = prepare(repo, tmp_path / "env", "claude", "t")
    shutil.rmtree(p.worktree_dir)
    result = finalize(p)
    assert result.branch is None and branches(repo) == ["main"]
    assert git(repo, "worktree", "list").count("\n") == 1


# --- in parallel -----------------------------------------------------------------------------------

def test_twenty_tasks_on_one_folder_in_parallel_each_get_their_own_branch(dirty_repo: Path, tmp_path: Path) -> None:
    before = snapshot(dirty_repo)

    def run_task(i: int) -> tuple[Prepared, object]:
        p = prepare(dirty_repo, tmp_path / f"env{i}", "claude", f"task-{i}")
        (p.worktree_dir / f"change-{i}.txt").write_text(f"task {i}\n")
        (p.worktree_dir / "src" / "app.py").write_text(f"print({i})\n")
        return p, finalize(p)

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(run_task, range(20)))
    assert len({p.branch for p, _ in results}) == 20
    for i, (p, result) in enumerate(results):
        assert result.branch == f"agent/claude/task-{i}" and len(result.commits) == 1
        assert sorted(changed_files(dirty_repo, p.baseline_commit, p.branch)) == [f"change-{i}.txt", "src/app.py"]
        assert git(dirty_repo, "show", f"{p.branch}:src/app.py") == f"print({i})\n"
        assert git(dirty_repo, "show", f"{p.branch}:notes/todo.md") == "untracked\n"
    assert snapshot(dirty_repo) == before
    assert git(dirty_repo, "worktree", "list").count("\n") == 1


# --- odd but real situations ---------------------------------------------------------------------------

def test_pipes_and_sockets_are_not_content(tmp_path: Path) -> None:
    """git does not see them (a dev server's socket, a fifo), so they are neither copied nor fatal."""
    repo = make_repo(tmp_path / "repo")
    os.mkfifo(repo / "socket.fifo")
    p = prepare(repo, tmp_path / "env", "claude", "t")
    assert not (p.worktree_dir / "socket.fifo").exists()
    finalize(p)


def test_a_repository_without_an_identity_still_gets_its_commits(tmp_path: Path, monkeypatch) -> None:
    repo = make_repo(tmp_path / "repo")
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("EMAIL", "")
    git(repo, "config", "user.useConfigOnly", "true")
    (repo / "dirty.txt").write_text("mine\n")
    p = prepare(repo, tmp_path / "env", "claude", "t")
    assert p.baseline_commit != p.base_commit
    (p.worktree_dir / "agent.txt").write_text("agent\n")
    result = finalize(p)
    assert result.error is None and len(result.commits) == 1


def test_a_linked_worktree_of_the_person_is_a_valid_resource(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "feature"))
    (tmp_path / "feature" / "wip.txt").write_text("work in progress\n")
    before = snapshot_linked(tmp_path / "feature")
    p = prepare(tmp_path / "feature", tmp_path / "env", "claude", "t")
    assert (p.worktree_dir / "wip.txt").read_text() == "work in progress\n"
    assert git(repo, "rev-parse", f"{p.baseline_commit}^").strip() == git(repo, "rev-parse", "feature").strip()
    finalize(p)
    assert snapshot_linked(tmp_path / "feature") == before


def snapshot_linked(wt: Path) -> tuple[str, bytes]:
    index = Path(git(wt, "rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    return git(wt, "status", "--porcelain", "--untracked-files=all"), index.read_bytes()


def test_work_left_off_the_branch_keeps_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    p = prepare(repo, tmp_path / "env", "claude", "t")
    git(p.worktree_dir, "checkout", "-q", "--detach", "HEAD~1")  # off the task's line of history
    (p.worktree_dir / "f.txt").write_text("x\n")
    result = finalize(p)
    assert result.kept_worktree and result.error and str(p.worktree_dir) in result.error
    assert p.worktree_dir.exists()
    kept = git(repo, "rev-parse", "refs/predictorx/kept/t").strip()
    assert kept in result.error or "refs/predictorx/kept/t" in result.error
    assert git(repo, "show", f"{kept}:f.txt") == "x\n"  # committed, not lost


def test_a_repository_with_submodules_fails_with_advice(tmp_path: Path) -> None:
    sub = make_repo(tmp_path / "lib")
    repo = make_repo(tmp_path / "repo")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendor/lib")
    git(repo, "commit", "-qm", "add a submodule")
    (repo / "vendor" / "lib" / "README.md").write_text("edited inside the submodule\n")
    before = git(repo, "status", "--porcelain")
    with pytest.raises(WorktreeError) as e:
        prepare(repo, tmp_path / "env", "claude", "t")
    msg = str(e.value)
    assert "submodule" in msg and "vendor/lib" in msg and "in_place" in msg
    assert branches(repo) == ["main"]
    assert git(repo, "worktree", "list").count("\n") == 1
    assert git(repo, "status", "--porcelain") == before
    assert not (tmp_path / "env" / "workdir").exists()
