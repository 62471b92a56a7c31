"""Fixtures for the daemon's context, repo-cache and GC tests: real git in temporary dirs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _git_config_isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own git config (signing, hooks, default branch) must not change results."""
    config = tmp_path_factory.mktemp("gitconfig") / "config"
    config.write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


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


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path / "forge")
