"""The sweep's git questions at a task's start (R-HAR-7, issue 9): none outside a repository, and
the default branch found with one git process instead of one per candidate ref."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from predictorx.daemon import workflowhooks as harness


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []
    real = harness.git_text

    def counting(args: list[str], **kw: Any) -> str:
        calls.append(list(args))
        return real(args, **kw)
    monkeypatch.setattr(harness, "git_text", counting)
    return calls


def _clone(tmp_path: Path, branch: str) -> Path:
    up = tmp_path / "up"
    up.mkdir()
    _git(up, "init", "-q", "-b", branch)
    _git(up, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "a")
    _git(tmp_path, "clone", "-q", str(up), "clone")
    return tmp_path / "clone"


async def test_outside_a_repository_the_start_runs_no_git(tmp_path: Path, counted: list[list[str]]) -> None:
    async def call(*a: Any, **k: Any) -> dict:
        return {}
    started = await harness.task_start(SimpleNamespace(call=call), "t-1", 1, tmp_path)  # type: ignore[arg-type]
    assert counted == [] and started.head is None and harness.mcp_args("t-1", "command", (), tmp_path, {}) == []
    assert not harness.in_repository(tmp_path) and harness.in_repository(_clone(tmp_path, "main"))


def test_the_default_branch_takes_one_git_process(tmp_path: Path, counted: list[list[str]]) -> None:
    clone = _clone(tmp_path, "main")
    head = _git(clone, "rev-parse", "HEAD")
    assert harness.default_branch(clone) == ("main", head) and len(counted) == 1
    assert harness.drift(clone, {"default_head": head}) == f"main has not moved since the last task ({head[:10]})"


def test_origin_head_elsewhere_and_a_local_main_are_found(tmp_path: Path) -> None:
    clone = _clone(tmp_path, "trunk")  # origin/HEAD → origin/trunk, not one of the usual names
    assert harness.default_branch(clone) == ("trunk", _git(clone, "rev-parse", "HEAD"))
    up = tmp_path / "up"
    _git(up, "branch", "main")
    assert harness.default_branch(up) == ("main", _git(up, "rev-parse", "HEAD"))
    assert harness.default_branch(tmp_path) == (None, None)
