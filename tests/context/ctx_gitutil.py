"""Real-git helpers for the context tests (a module of its own so test files can import it)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


class Remote:
    """A bare repository standing in for a forge, plus a clone to push new commits from."""

    def __init__(self, base: Path):
        self.bare = base / "remote.git"
        self.work = base / "author"
        git("init", "--quiet", "--bare", "-b", "main", str(self.bare))
        git("init", "--quiet", "-b", "main", str(self.work))
        git("remote", "add", "origin", str(self.bare), cwd=self.work)
        self.commit("README.md", "hello\n")

    @property
    def url(self) -> str:
        return str(self.bare)

    def commit(self, name: str, content: str, branch: str = "main") -> str:
        if git("branch", "--show-current", cwd=self.work) != branch:
            git("checkout", "--quiet", "-B", branch, cwd=self.work)
        (self.work / name).write_text(content)
        git("add", name, cwd=self.work)
        git("commit", "--quiet", "-m", f"change {name}", cwd=self.work)
        git("push", "--quiet", "origin", branch, cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work)

    def tag(self, name: str) -> None:
        git("tag", name, cwd=self.work)
        git("push", "--quiet", "origin", name, cwd=self.work)
