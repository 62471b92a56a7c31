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


def test_the_real_claude_refuses_root_without_is_sandbox_and_the_task_says_how_to_opt_in(tmp_path, monkeypatch):
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


async def _ignore(_message) -> None:
    return None


def _env(tmp_path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
            "ANTHROPIC_API_KEY": "x", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", **extra}


def test_only_is_sandbox_1_opts_in_and_the_reason_says_so(tmp_path, monkeypatch):
    """Claude Code reads IS_SANDBOX=1 only: with IS_SANDBOX=true it still refuses, so the daemon
    refuses before starting it too, and says which value it needs."""
    claude = require("claude").path()
    p = subprocess.run([str(claude), "-p", "--permission-mode", "bypassPermissions"], input=b"hi",
                       env=_env(tmp_path, IS_SANDBOX="true"), capture_output=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 1 and b"root" in p.stderr, p.stderr
    monkeypatch.setenv("IS_SANDBOX", "true")
    spec = RunSpec(prompt="hi", cwd=tmp_path, env={}, logs_dir=tmp_path / "logs", argv_override=[str(claude)])
    result = asyncio.run(get("claude").run(spec, _ignore, asyncio.Event()))
    assert result.status == "failed" and result.failure_reason.startswith(ROOT_REFUSAL)
    assert "IS_SANDBOX=true is set, but Claude Code takes only IS_SANDBOX=1" in result.failure_reason


def test_a_refusal_the_daemon_could_not_foresee_still_names_the_setting(tmp_path, monkeypatch):
    """IS_SANDBOX=1 in the daemon's environment, but the agent's command line (`--command`, here
    `env -u IS_SANDBOX claude`, as `sudo claude` would) drops it: the real Claude Code refuses
    after it started, and the task's reason is the daemon's sentence, not an opaque exit code."""
    claude = require("claude").path()
    monkeypatch.setenv("IS_SANDBOX", "1")
    for key, value in _env(tmp_path).items():
        monkeypatch.setenv(key, value)
    spec = RunSpec(prompt="hi", cwd=tmp_path, env={}, logs_dir=tmp_path / "logs",
                   argv_override=["env", "-u", "IS_SANDBOX", str(claude)])
    result = asyncio.run(get("claude").run(spec, _ignore, asyncio.Event()))
    assert result.status == "failed" and result.exit_code == 1
    assert result.failure_reason.startswith(ROOT_REFUSAL)
    assert "IS_SANDBOX=1" in result.failure_reason and "bypassPermissions" in result.failure_reason
    assert "cannot be used with root/sudo privileges" in result.failure_reason  # and what Claude Code said
