"""Running as root (R-EX-9): Claude Code refuses bypassPermissions as root unless IS_SANDBOX is set;
the task fails with a reason that names the setting, not an opaque exit code."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from predictorx.agents import RunSpec, get
from predictorx.agents.claude import ROOT_REFUSAL

from .conftest import require

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root is refused")


def test_the_real_claude_refuses_root_without_is_sandbox_and_the_task_says_how_to_opt_in(tmp_path, monkeypatch):  # noqa: ANN001
    claude = require("claude").path()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
           "ANTHROPIC_API_KEY": "x", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    # The fact the daemon relies on: this version refuses, on stderr, with exit code 1.
    p = subprocess.run([str(claude), "-p", "--permission-mode", "bypassPermissions"], input=b"hi", env=env,
                       capture_output=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 1 and b"root" in p.stderr, p.stderr

    monkeypatch.delenv("IS_SANDBOX")
    spec = RunSpec(prompt="hi", cwd=tmp_path, env={}, logs_dir=tmp_path / "logs", argv_override=[str(claude)])
    result = asyncio.run(get("claude").run(spec, _ignore, asyncio.Event()))
    assert result.status == "failed" and result.failure_reason == ROOT_REFUSAL
    assert "IS_SANDBOX=1" in result.failure_reason and "bypassPermissions" in result.failure_reason
    # Opting in is the daemon's environment (or the run's): then it starts.
    assert get("claude").build_argv(RunSpec(prompt="hi", cwd=tmp_path, env={"IS_SANDBOX": "1"}, logs_dir=tmp_path))


async def _ignore(_message) -> None:  # noqa: ANN001
    return None
