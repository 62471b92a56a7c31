"""The repositories of a delivery test (tests/daemon/test_delivery_*.py): the person's, with the
task's branch, and the run's checkout of it (a repository of its own borrowing the person's
objects, as a run's is); git called directly, not through a `git` a test put first on PATH."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

BRANCH = "agent/bot/t1"
ID = ["-c", "user.name=p", "-c", "user.email=p@example.com"]
REAL_GIT = shutil.which("git") or "git"  # the test's own git calls are not counted


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([REAL_GIT, "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          timeout=60).stdout.strip()


def person_repo(tmp_path: Path) -> Path:
    """The person's repository: `main` with one commit (README.md, "hello")."""
    person = tmp_path / "person"
    person.mkdir()
    git(person, "init", "-q", "-b", "main")
    (person / "README.md").write_text("hello\n")
    git(person, "add", "README.md")
    git(person, *ID, "commit", "-qm", "base")
    return person


def person_and_run(tmp_path: Path) -> tuple[Path, Path, str]:
    """(the person's repository, the run's checkout, `start`: the commit the task's branch was made at)."""
    person = person_repo(tmp_path)
    start = git(person, "rev-parse", "HEAD")
    git(person, "branch", BRANCH, start)
    run = tmp_path / "run"
    git(tmp_path, "clone", "-q", "--shared", str(person), str(run))
    git(run, "checkout", "-q", BRANCH)
    return person, run, start
