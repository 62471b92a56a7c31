"""Issue 22 (run ended → PR opened): the delivery starts the push of the run's head commit as soon as
its objects are in the quarantine and it builds on the branch — beside the leftover check (`add`,
`write-tree`), not after it. The branch's final tip is told to the push afterwards (`settle`): the
head itself, the leftover commit on top of it (pushed next, a fast-forward, before the push is
reported), or None when the delivery failed on the way (nothing is reported; the push ends before
the quarantine it reads is removed). Work that does not build on the branch is never pushed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from predictorx.daemon import delivery

from delivery_repos import BRANCH, ID, REAL_GIT, git, person_and_run





def _commit(run: Path, name: str, text: str) -> str:
    (run / name).write_text(text)
    git(run, "add", name)
    git(run, *ID, "commit", "-qm", name)
    return git(run, "rev-parse", "HEAD")


def _wrap_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str, command: str = "write-tree") -> None:
    """A `git` first on PATH that runs `before` (shell) before the daemon's `command`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\ncase " $* " in *" {command} "*) {before} ;; esac\n'
                                 f'exec "{REAL_GIT}" "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


class Forge:
    """A bare repository the push_from below pushes to (no force: every push is a fast-forward)."""

    def __init__(self, tmp_path: Path):
        self.path = tmp_path / "forge.git"
        subprocess.run([REAL_GIT, "init", "-q", "--bare", str(self.path)], check=True, timeout=60)
        self.log: list[tuple] = []

    def push(self, quarantine: Path, sha: str) -> None:
        subprocess.run([REAL_GIT, "--git-dir", str(quarantine), "push", "-q", str(self.path),
                        f"{sha}:refs/heads/{BRANCH}"], check=True, capture_output=True, timeout=60)

    def push_from(self, quarantine: Path, tip: str):
        self.log.append(("pushed", tip))
        self.push(quarantine, tip)

        def settle(final: str | None) -> None:
            self.log.append(("settled", final, quarantine.is_dir()))
            if final is not None and final != tip:
                self.push(quarantine, final)
        return settle

    def marking(self, started: Path):
        """`push_from` that also touches `started` once the push began (a wrapped git waits for it)."""
        def push_from(quarantine: Path, tip: str):
            settle = self.push_from(quarantine, tip)
            started.touch()
            return settle
        return push_from

    def head(self) -> str:
        return git(self.path, "rev-parse", f"refs/heads/{BRANCH}")


def test_the_runs_head_is_pushed_beside_the_leftover_check_not_after_it(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's write-tree (the end of the leftover check) waits here until the push has
    started: the push of the run's head does not wait for the leftover check. (Before, the push
    started only after write-tree: write-tree gave up waiting and said so.)"""
    person, run, start = person_and_run(tmp_path)
    tip = _commit(run, "feature.txt", "the agent's work\n")
    started, said = tmp_path / "push-started", tmp_path / "write-tree.log"
    _wrap_git(tmp_path, monkeypatch, _waits_for(started, said))
    forge = Forge(tmp_path)

    done = delivery.deliver(run, person / ".git", BRANCH, start, agent_name="bot", task_id="t1",
                            scratch=tmp_path / "scratch", push_from=forge.marking(started))
    assert done.tip == tip and done.problem is None and not done.leftovers
    assert said.read_text().split() == ["after-push"]
    assert forge.log == [("pushed", tip), ("settled", tip, True)] and forge.head() == tip


def _waits_for(started: Path, said: Path) -> str:
    """Shell: wait (at most 10 s) for `started`, then say in `said` whether it was there."""
    return (f'i=0; while [ ! -e "{started}" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; '
            f'if [ -e "{started}" ]; then echo after-push >> "{said}"; else echo before-push >> "{said}"; fi')


def test_a_head_on_the_runs_task_branch_is_pushed_before_git_is_asked_about_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's HEAD on its own copy of the task branch, its commit a loose object: the push starts
    once the objects are copied, before the cat-file that checks the run's commits (it waits
    here until the push started; before, the push waited for it)."""
    person, run, start = person_and_run(tmp_path)
    tip = _commit(run, "feature.txt", "the agent's work\n")
    started, said = tmp_path / "push-started", tmp_path / "cat-file.log"
    _wrap_git(tmp_path, monkeypatch, _waits_for(started, said), "cat-file")
    forge = Forge(tmp_path)

    done = delivery.deliver(run, person / ".git", BRANCH, start, agent_name="bot", task_id="t1",
                            scratch=tmp_path / "scratch", push_from=forge.marking(started))
    assert done.tip == tip and said.read_text().split() == ["after-push"]
    assert forge.log == [("pushed", tip), ("settled", tip, True)] and forge.head() == tip


@pytest.mark.parametrize("how", ["packed", "detached"])
def test_a_head_git_must_check_is_pushed_once_it_is_checked(tmp_path: Path, how: str) -> None:
    """A head whose object is packed (the agent ran `git gc`), or a detached HEAD on top of the
    branch: pushed once cat-file (and merge-base) said it is a commit that builds on the branch."""
    person, run, start = person_and_run(tmp_path)
    if how == "detached":
        git(run, "checkout", "-q", "--detach")
    tip = _commit(run, "feature.txt", "the agent's work\n")
    if how == "packed":
        git(run, "gc", "-q")
        assert not (run / ".git" / "objects" / tip[:2] / tip[2:]).exists()
    forge = Forge(tmp_path)
    done = delivery.deliver(run, person / ".git", BRANCH, start, agent_name="bot", task_id="t1",
                            scratch=tmp_path / "scratch", push_from=forge.push_from)
    assert done.tip == tip and done.problem is None
    assert forge.log == [("pushed", tip), ("settled", tip, True)] and forge.head() == tip


def test_leftovers_on_the_runs_commit_are_pushed_next_as_a_fast_forward(tmp_path: Path) -> None:
    person, run, start = person_and_run(tmp_path)
    head = _commit(run, "feature.txt", "committed\n")
    (run / "left.txt").write_text("left uncommitted\n")
    forge = Forge(tmp_path)
    done = delivery.deliver(run, person / ".git", BRANCH, start, agent_name="bot", task_id="t1",
                            scratch=tmp_path / "scratch", push_from=forge.push_from)
    assert done.leftovers and done.problem is None and done.tip != head
    assert git(person, "rev-parse", f"{done.tip}^") == head
    # The head first (beside the leftover check), then the leftover commit: the final tip it is settled with.
    assert forge.log == [("pushed", head), ("settled", done.tip, True)]
    assert forge.head() == done.tip and git(forge.path, "show", f"{BRANCH}:left.txt") == "left uncommitted"


def test_only_leftovers_are_pushed_once_their_commit_is_made(tmp_path: Path) -> None:
    """No commit of the run's own (its head is where the branch started): nothing is pushed before
    the leftover commit exists."""
    person, run, start = person_and_run(tmp_path)
    (run / "left.txt").write_text("left\n")
    forge = Forge(tmp_path)
    done = delivery.deliver(run, person / ".git", BRANCH, start, agent_name="bot", task_id="t1",
                            scratch=tmp_path / "scratch", push_from=forge.push_from)
    assert done.leftovers and forge.log == [("pushed", done.tip), ("settled", done.tip, True)]


def test_a_head_that_does_not_build_on_the_branch_is_never_pushed(tmp_path: Path) -> None:
    person, run, start = person_and_run(tmp_path)
    git(run, "checkout", "-q", "--orphan", "elsewhere")
    _commit(run, "other.txt", "unrelated history\n")
    forge = Forge(tmp_path)
    done = delivery.deliver(run, person / ".git", BRANCH, start, agent_name="bot", task_id="t1",
                            scratch=tmp_path / "scratch", push_from=forge.push_from)
    assert done.problem and "does not build on branch" in done.problem and done.tip == start
    assert forge.log == []


def test_a_delivery_that_fails_after_the_push_began_settles_it_with_nothing_before_cleaning_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """write-tree fails here after the head's push started: the push is told None (it is not
    reported: no PR opens for a delivery that failed) and ends while its quarantine is still there."""
    person, run, start = person_and_run(tmp_path)
    tip = _commit(run, "feature.txt", "the agent's work\n")
    started = tmp_path / "push-started"
    _wrap_git(tmp_path, monkeypatch,
              f'i=0; while [ ! -e "{started}" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; exit 1')
    forge = Forge(tmp_path)

    with pytest.raises(delivery.DeliveryError):
        delivery.deliver(run, person / ".git", BRANCH, start, agent_name="bot", task_id="t1",
                         scratch=tmp_path / "scratch", push_from=forge.marking(started))
    assert forge.log == [("pushed", tip), ("settled", None, True)]
    assert not (tmp_path / "scratch" / "quarantine.git").exists()
