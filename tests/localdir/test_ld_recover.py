"""After a crash: a restarted daemon finishes or cleans the worktrees its previous run left."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from ld_git import git, make_repo, snapshot

from predictorx.daemon.worktree import MARKER, prepare, recover

# The previous daemon: prepares a task's worktree, lets the "agent" write into it, then dies
# without finalising (SIGKILL, no cleanup of any kind).
CRASHING_DAEMON = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from predictorx.daemon.worktree import prepare
    p = prepare(sys.argv[1], sys.argv[2], "claude", sys.argv[3])
    for name in sys.argv[4:]:
        (p.worktree_dir / name).write_text("written by the agent before the crash\\n")
    print(p.worktree_dir, p.branch, flush=True)
    if os.environ.get("STAY_ALIVE"):
        sys.stdin.readline()
    os.kill(os.getpid(), signal.SIGKILL)
""")


def crash_during_task(repo: Path, env_root: Path, task: str, *files: str) -> tuple[Path, str]:
    r = subprocess.run([sys.executable, "-c", CRASHING_DAEMON, str(repo), str(env_root), task, *files],
                       capture_output=True, text=True)
    assert r.returncode == -signal.SIGKILL, r.stderr
    wt, branch = r.stdout.split()
    return Path(wt), branch


def test_leftovers_of_a_crashed_task_are_committed_and_the_worktree_removed(dirty_repo: Path, tmp_path: Path) -> None:
    before = snapshot(dirty_repo)
    workspaces = tmp_path / "workspaces"
    wt, branch = crash_during_task(dirty_repo, workspaces / "ws" / "task-1", "task-1", "half-done.txt")
    assert wt.exists() and (wt.parent / MARKER).exists()

    said = recover([workspaces])
    assert len(said) == 1 and "task-1" in said[0] and branch in said[0]
    assert git(dirty_repo, "show", f"{branch}:half-done.txt") == "written by the agent before the crash\n"
    assert not wt.exists() and not (wt.parent / MARKER).exists()
    assert str(wt) not in git(dirty_repo, "worktree", "list")
    assert snapshot(dirty_repo) == before
    assert recover([workspaces]) == []  # nothing left to do


def test_a_crashed_task_that_did_nothing_is_cleaned_away(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wt, branch = crash_during_task(repo, tmp_path / "envs" / "t2", "t2")
    said = recover([tmp_path / "envs"])
    assert "changed nothing" in said[0]
    assert branch not in git(repo, "branch") and not wt.exists()


def test_a_half_made_worktree_is_taken_back(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wt, branch = crash_during_task(repo, tmp_path / "envs" / "t3", "t3")
    marker = wt.parent / MARKER
    record = json.loads(marker.read_text())
    record["state"] = "preparing"  # as if the crash came before the worktree was ready
    marker.write_text(json.dumps(record))
    said = recover([tmp_path / "envs" / "t3"])
    assert "half-made" in said[0]
    assert not wt.exists() and branch not in git(repo, "branch")
    assert git(repo, "worktree", "list").count("\n") == 1


def test_worktrees_of_a_live_daemon_are_left_alone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    proc = subprocess.Popen([sys.executable, "-c", CRASHING_DAEMON, str(repo), str(tmp_path / "envs" / "t4"),
                             "t4", "wip.txt"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "STAY_ALIVE": "1"})
    try:
        wt = Path(proc.stdout.readline().split()[0])
        assert recover([tmp_path / "envs"]) == []
        assert (wt / "wip.txt").exists()
    finally:
        proc.kill()
        proc.wait()
    assert len(recover([tmp_path / "envs"])) == 1


def test_a_worktree_kept_for_a_failed_commit_is_tried_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wt, branch = crash_during_task(repo, tmp_path / "envs" / "t5", "t5", "work.txt")
    # The person has the task's branch checked out in their folder: git refuses to move it there.
    # (Signing cannot make it fail: the daemon's own commits never sign.)
    git(repo, "checkout", "-q", branch)
    said = recover([tmp_path / "envs"])
    assert "could not be put on branch" in said[0] and wt.exists()
    git(repo, "checkout", "-q", "main")  # the person switches back
    said = recover([tmp_path / "envs"])
    assert branch in said[0] and not wt.exists()
    assert git(repo, "show", f"{branch}:work.txt")


def test_broken_records_are_reported_and_do_not_stop_the_others(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (tmp_path / "envs" / "garbled").mkdir(parents=True)
    (tmp_path / "envs" / "garbled" / MARKER).write_text("{not json")
    gone = make_repo(tmp_path / "gone")
    crash_during_task(gone, tmp_path / "envs" / "orphan", "t-orphan", "x.txt")
    shutil.rmtree(gone)
    wt, branch = crash_during_task(repo, tmp_path / "envs" / "fine", "t-fine", "y.txt")
    said = recover([tmp_path / "envs"])
    assert len(said) == 3
    assert any("unreadable" in s for s in said)
    assert any("t-orphan" in s and "is gone" in s for s in said)
    assert any("t-fine" in s and branch in s for s in said)
    assert git(repo, "show", f"{branch}:y.txt")


def test_recover_says_a_worktree_was_kept_why_and_where(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    p = prepare(repo, tmp_path / "envs" / "t6", "claude", "t6")
    git(p.worktree_dir, "checkout", "-q", "--detach", "HEAD~1")
    git(p.worktree_dir, "commit", "-q", "--allow-empty", "-m", "off the branch")
    marker = p.env_root / MARKER
    record = json.loads(marker.read_text())
    record["pid"] = -1  # as if the daemon that ran the task had died
    marker.write_text(json.dumps(record))
    said = recover([tmp_path / "envs"])
    assert len(said) == 1
    assert not said[0].startswith("Finished")
    assert "Kept the worktree" in said[0] and "t6" in said[0]
    assert str(p.worktree_dir) in said[0] and f"git -C {p.worktree_dir} status" in said[0]
    assert "does not build on branch" in said[0]  # why
    assert p.worktree_dir.exists() and marker.exists()
