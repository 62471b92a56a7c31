"""Issue 22 (run ended → PR opened): the delivery of a run's work onto its branch is on the push's
path, so it runs few git processes — counted here by a `git` first on PATH that logs each call and
runs the real one — and says the branch holds the work before it cleans up. What it runs stays in
repositories of the daemon's (the quarantine, the target): never in the agent's git dir."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from predictorx.daemon import delivery

from delivery_repos import BRANCH, ID, REAL_GIT, git, person_and_run, person_repo




@pytest.fixture
def git_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The subcommands the daemon's git runs from here on (top-level processes, in order)."""
    real = REAL_GIT
    bin_dir, log = tmp_path / "bin", tmp_path / "git-calls.log"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def calls() -> list[str]:
        out = []
        for line in (log.read_text().splitlines() if log.exists() else []):
            words, i = line.split(" "), 0
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in ("-C", "-c", "--git-dir") else 1
            out.append(words[i] if i < len(words) else "")
        return out

    def reset() -> None:
        log.unlink(missing_ok=True)
    calls.reset = reset  # type: ignore[attr-defined]
    return calls



def _deliver(person: Path, run: Path, start: str, tmp_path: Path, seen: list[tuple[str | None, bool]]):
    scratch = tmp_path / "scratch"

    def delivered(done: delivery.Delivered) -> None:
        # Told while the quarantine is still there: the branch already holds the work.
        seen.append((git(person, "rev-parse", f"refs/heads/{BRANCH}"), (scratch / "quarantine.git").is_dir()))
        assert git(person, "rev-parse", f"refs/heads/{BRANCH}") == done.tip
    done = delivery.deliver(run, person / ".git", BRANCH, start, agent_name="bot", task_id="t1", scratch=scratch,
                            delivered=delivered)
    assert not (scratch / "quarantine.git").exists()  # cleaned up after
    return done


def test_a_run_that_committed_its_work_is_delivered_with_six_git_processes(tmp_path: Path, git_calls) -> None:
    person, run, start = person_and_run(tmp_path)
    (run / "feature.txt").write_text("the agent's work\n")
    git(run, "add", "feature.txt")
    git(run, *ID, "commit", "-qm", "feature")
    tip = git(run, "rev-parse", "HEAD")
    seen: list[tuple[str | None, bool]] = []
    git_calls.reset()
    done = _deliver(person, run, start, tmp_path, seen)
    assert done.tip == tip and not done.leftovers and done.problem is None
    assert git(person, "rev-parse", f"refs/heads/{BRANCH}") == tip
    assert seen == [(tip, True)]
    # The target's object dir and branch in one rev-parse, the person's ignore file beside it, the
    # run's commits and trees in one cat-file, add + write-tree (nothing left over), one fetch.
    # Before: init, rev-parse ×2, cat-file ×2, config, ls-files, add, write-tree, rev-parse,
    # update-ref, fetch (12).
    assert sorted(git_calls()) == sorted(["rev-parse", "config", "cat-file", "add", "write-tree", "fetch"])


def test_a_run_that_changed_nothing_fetches_nothing(tmp_path: Path, git_calls) -> None:
    person, run, start = person_and_run(tmp_path)
    seen: list[tuple[str | None, bool]] = []
    git_calls.reset()
    done = _deliver(person, run, start, tmp_path, seen)
    assert done.tip == start and not done.leftovers
    assert seen == [(start, True)]
    assert "fetch" not in git_calls() and len(git_calls()) == 5


def test_leftovers_are_committed_on_the_agents_commit_without_an_ancestry_check(tmp_path: Path, git_calls) -> None:
    person, run, start = person_and_run(tmp_path)
    (run / "feature.txt").write_text("committed\n")
    git(run, "add", "feature.txt")
    git(run, *ID, "commit", "-qm", "feature")
    head = git(run, "rev-parse", "HEAD")
    (run / "left.txt").write_text("left uncommitted\n")
    seen: list[tuple[str | None, bool]] = []
    git_calls.reset()
    done = _deliver(person, run, start, tmp_path, seen)
    assert done.leftovers and done.problem is None
    assert git(person, "rev-parse", f"{BRANCH}^") == head
    assert git(person, "show", f"{BRANCH}:left.txt") == "left uncommitted"
    assert "merge-base" not in git_calls() and git_calls().count("fetch") == 1


def test_an_index_git_cannot_read_is_replaced_by_heads_tree(tmp_path: Path, git_calls) -> None:
    """The run's index is only a head start: when git cannot read it (an agent wrote garbage there),
    the delivery starts from HEAD's tree and still takes every file."""
    person, run, start = person_and_run(tmp_path)
    (run / "left.txt").write_text("left\n")
    (run / ".git" / "index").write_bytes(b"DIRC\x00\x00\x00\x09garbage")
    seen: list[tuple[str | None, bool]] = []
    done = _deliver(person, run, start, tmp_path, seen)
    assert done.leftovers and seen and seen[0][1]
    assert git(person, "show", f"{BRANCH}:left.txt") == "left"
    assert git(person, "show", f"{BRANCH}:README.md") == "hello"
    assert "read-tree" in git_calls()


def test_finalize_tells_the_push_first_and_removes_the_worktree_off_the_finishs_path(tmp_path: Path) -> None:
    """worktree.finalize: `delivered(tip)` comes while the worktree is still there and the branch
    holds the work; on return the worktree is gone from its place at once (renamed into the env
    root's scratch) and its files are deleted in a thread soon after."""
    import time

    from predictorx.daemon.worktree import finalize, prepare

    person = person_repo(tmp_path)
    p = prepare(person, tmp_path / "env", "bot", "t1")
    (p.worktree_dir / "work.txt").write_text("the agent's work\n")
    git(p.worktree_dir, "add", "work.txt")
    git(p.worktree_dir, *ID, "commit", "-qm", "work")
    told: list[tuple[str | None, bool, str]] = []
    result = finalize(p, delivered=lambda tip: told.append(
        (tip, p.worktree_dir.is_dir(), git(person, "rev-parse", f"refs/heads/{p.branch}"))))
    assert result.error is None and len(result.commits) == 1
    assert told == [(result.commits[0], True, result.commits[0])]
    assert not p.worktree_dir.exists()
    scratch = p.env_root / ".delivery"
    deadline = time.monotonic() + 30
    while any(x.name.startswith("removed-") for x in scratch.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(x.name.startswith("removed-") for x in scratch.iterdir())


def test_the_push_starts_from_the_quarantine_before_the_fetch_and_the_rest_waits_for_it(tmp_path: Path,
                                                                                         git_calls) -> None:
    """Issue 22 (run ended → PR opened): `push_from(quarantine, tip)` is called as soon as the run's
    head is in the quarantine (tests/daemon/test_delivery_early_push.py: before any git process
    when it is on the run's task branch; the rest of the delivery's git runs beside the push),
    before the person's repository holds the branch — and
    the quarantine alone is a full source for the push (the run's objects, the target's as its
    alternate). The fetch into the person's repository and `delivered` (the handoff, the review)
    come only after the push's wait (`settle(final tip)`) returns, so no other git of the daemon's
    runs beside the push after the leftover check."""
    person, run, start = person_and_run(tmp_path)
    (run / "feature.txt").write_text("the agent's work\n")
    git(run, "add", "feature.txt")
    git(run, *ID, "commit", "-qm", "feature")
    tip = git(run, "rev-parse", "HEAD")
    forge = tmp_path / "forge.git"
    subprocess.run([REAL_GIT, "init", "-q", "--bare", str(forge)], check=True, timeout=60)
    order: list[tuple] = []
    scratch = tmp_path / "scratch"
    git_calls.reset()

    def push_from(quarantine: Path, new_tip: str):
        calls = git_calls()
        order.append(("push_from", set(calls) <= {"rev-parse", "config", "cat-file", "add", "write-tree"},
                      git(person, "rev-parse", f"refs/heads/{BRANCH}"), new_tip))
        subprocess.run([REAL_GIT, "--git-dir", str(quarantine), "push", "-q", str(forge),
                        f"{new_tip}:refs/heads/{BRANCH}"], check=True, capture_output=True, timeout=60)

        def settle(final: str | None) -> None:
            order.append(("push waited", final, "fetch" in git_calls(), quarantine.is_dir()))
        return settle

    done = delivery.deliver(run, person / ".git", BRANCH, start, agent_name="bot", task_id="t1", scratch=scratch,
                            delivered=lambda d: order.append(("delivered", "fetch" in git_calls())),
                            push_from=push_from)
    assert done.tip == tip and done.problem is None
    assert order == [("push_from", True, start, tip), ("push waited", tip, False, True), ("delivered", True)]
    assert git(forge, "rev-parse", f"refs/heads/{BRANCH}") == tip  # pushed from the quarantine alone
    assert git(person, "rev-parse", f"refs/heads/{BRANCH}") == tip
    assert not (scratch / "quarantine.git").exists()


def test_a_run_that_changed_nothing_pushes_nothing(tmp_path: Path) -> None:
    person, run, start = person_and_run(tmp_path)
    asked: list[str] = []
    done = delivery.deliver(run, person / ".git", BRANCH, start, agent_name="bot", task_id="t1",
                            scratch=tmp_path / "scratch", push_from=lambda q, t: asked.append(t) or (lambda final: None))
    assert done.tip == start and asked == []


def test_an_object_add_wrote_beside_the_copy_is_not_a_failure(tmp_path: Path) -> None:
    """`add` runs beside the copy of the run's objects: when it wrote one of them first (a file the
    agent committed in the same second as it changed it is hashed again), the copy keeps it and
    goes on — under load this failed the task ("could not be read": the copy's exclusive create)."""
    name = "c" * 38
    (tmp_path / "run" / "ab").mkdir(parents=True)
    (tmp_path / "run" / "ab" / name).write_bytes(b"the object")
    (tmp_path / "quarantine" / "ab").mkdir(parents=True)
    (tmp_path / "quarantine" / "ab" / name).write_bytes(b"the object")
    (tmp_path / "run" / "ab" / ("d" * 38)).write_bytes(b"another")
    delivery._copy_objects(tmp_path / "run", tmp_path / "quarantine")
    assert sorted(p.name for p in (tmp_path / "quarantine" / "ab").iterdir()) == [name, "d" * 38]
    assert (tmp_path / "quarantine" / "ab" / ("d" * 38)).read_bytes() == b"another"


def test_an_edit_in_the_second_the_runs_index_was_written_is_delivered(tmp_path: Path) -> None:
    """Git trusts an index entry whose stat data match the file unless the file changed no earlier
    than the index was written (its racy-entry check, to the second): the delivery's copy of the
    run's index keeps the index's mtime, or an agent's edit (same size) made in that second is lost —
    a run 'completed · no changes' in CI. Reproduced here a second in the past (mtimes set; the
    ctime git also compares is the real one, so the steps are retried until they fall in one second)."""
    person, run, start = person_and_run(tmp_path)
    app, index = run / "app.py", run / ".git" / "index"
    past = int(time.time()) - 100
    for _ in range(50):
        app.write_text("print('v1')\n")
        os.utime(app, (past, past))
        before = int(os.stat(app).st_ctime)
        git(run, "add", "app.py")  # the entry: mtime `past`, this second's ctime, the size of v1
        with app.open("r+") as f:  # the agent's edit: same inode, same size
            f.write("print('v2')\n")
        os.utime(app, (past, past))
        os.utime(index, (past, past))  # the index written in the second the file last changed
        if int(os.stat(app).st_ctime) == before:
            break
    else:
        pytest.fail("could not make the edit within one second")
    seen: list[tuple[str | None, bool]] = []
    done = _deliver(person, run, start, tmp_path, seen)
    assert done.leftovers
    assert git(person, "show", f"{BRANCH}:app.py") == "print('v2')"
