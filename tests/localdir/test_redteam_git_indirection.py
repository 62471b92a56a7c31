"""Red team of issue 29's "a run's git dir is data": the indirections of a `.git` the agent wrote.

The harness's shadow view (gitview) and the delivery (delivery) read an agent's git dir as files,
never its config or `info/alternates`. But they still followed where the git dir *is*: a
`.git/commondir` or a `gitdir:` file naming another repository, or `.git/objects` / `.git/refs`
replaced by symlinks to another repository's. Inside the sandbox those names point nowhere; the
daemon, outside, followed them: the handoff posted to the server listed the commits of another
repository of the daemon's user (another workspace's repository cache, say) or its HEAD's commit
id (`default_head`), and the delivery
copied that repository's objects into the quarantine, so a detached HEAD at one of its commits was
put on the task's branch. Now neither follows a symlink nor leaves the folder's own `.git`
(a linked worktree's git dir only where its repository names that worktree back).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from predictorx.daemon import runcheckouts
from predictorx.daemon import workflowhooks as harness
from predictorx.daemon.repocache import RepoCache


def git(cwd: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=check, capture_output=True, text=True,
                          timeout=60).stdout.strip()


def _secret(tmp_path: Path) -> tuple[Path, str]:
    secret = tmp_path / "secret"
    secret.mkdir()
    git(secret, "init", "-q", "-b", "main")
    (secret / "plan.txt").write_text("the other workspace's PRIVATE PLAN\n")
    git(secret, "add", "plan.txt")
    git(secret, "-c", "user.name=s", "-c", "user.email=s@x", "commit", "-qm", "PRIVATE PLAN")
    return secret / ".git", git(secret, "rev-parse", "HEAD")


def _commondir(dot_git: Path, secret: Path) -> None:
    (dot_git / "commondir").write_text(f"{secret}\n")


def _gitfile(dot_git: Path, secret: Path) -> None:
    subprocess.run(["rm", "-rf", str(dot_git)], check=True, timeout=30)
    dot_git.write_text(f"gitdir: {secret}\n")


def _linked_stores(dot_git: Path, secret: Path) -> None:
    for name in ("objects", "refs"):
        subprocess.run(["rm", "-rf", str(dot_git / name)], check=True, timeout=30)
        (dot_git / name).symlink_to(secret / name)


VECTORS = [_commondir, _gitfile, _linked_stores]


@pytest.mark.parametrize("plant", VECTORS, ids=lambda f: f.__name__)
def test_the_handoff_facts_tell_nothing_of_a_repository_the_git_dir_points_to(tmp_path: Path, plant) -> None:
    secret, secret_commit = _secret(tmp_path)
    folder = tmp_path / "folder"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    git(folder, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "--allow-empty", "-m", "start")
    start = git(folder, "rev-parse", "HEAD")
    plant(folder / ".git", secret)
    facts = harness._git_facts(harness.EndState(start_head=start), folder)
    assert "PRIVATE PLAN" not in str(facts) and secret_commit[:7] not in str(facts), facts


def test_objects_linked_to_another_repository_are_not_delivered(tmp_path: Path) -> None:
    secret, secret_commit = _secret(tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    (src / "README.md").write_text("hello\n")
    git(src, "add", "README.md")
    git(src, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "base")
    url = f"file://{src}"
    cache = RepoCache(tmp_path / "root")
    co = cache.checkout(url, None, tmp_path / "task1" / "workdir" / "src", "agent/bot/t1")
    dot_git = co.path / ".git"
    # The agent keeps its own objects beside a link to the other repository's, and leaves HEAD
    # detached at a commit there (learnt, say, from an earlier run's handoff).
    os.rename(dot_git / "objects", dot_git / "own-objects")
    (dot_git / "objects").symlink_to(secret / "objects")
    (dot_git / "HEAD").write_text(secret_commit + "\n")
    placed = {"url": url, "path": str(co.path), "branch": co.branch, "start": co.commit, "cache": str(co.cache)}
    try:
        runcheckouts.deliver_placement(cache, placed, tmp_path / "task1" / ".delivery", agent_name="bot",
                                       task_id="t1")
    except Exception:  # noqa: BLE001 — refusing the delivery is fine too; what matters is the cache
        pass
    assert subprocess.run(["git", "--git-dir", str(co.cache), "cat-file", "-e", secret_commit],
                          capture_output=True, timeout=30).returncode != 0
