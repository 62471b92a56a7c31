"""Fixtures for the daemon's context, repo-cache and GC tests: real git in temporary dirs."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctx_gitutil import Remote


@pytest.fixture(autouse=True)
def _git_config_isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own git config (signing, hooks, default branch) must not change results."""
    config = tmp_path_factory.mktemp("gitconfig") / "config"
    config.write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")



@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path / "forge")
