"""The agent never inherits the daemon's own secrets (R-EX-4)."""

from __future__ import annotations

from pathlib import Path

from predictorx import agents
from predictorx.agents import RunSpec


def test_daemon_settings_are_not_inherited(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PREDICTORX_DATABASE_URL", "postgresql://user:secret@db/prod")
    monkeypatch.setenv("PREDICTORX_HOME", "/home/owner/.local/share/predictorx")
    monkeypatch.setenv("DATABASE_URL", "postgresql://user:secret@db/other")
    monkeypatch.setenv("UNRELATED", "kept")
    spec = RunSpec(prompt="p", cwd=tmp_path, env={"PREDICTORX_TOKEN": "pxt_task", "PREDICTORX_HOME": str(tmp_path)},
                   logs_dir=tmp_path)
    env = agents.get("claude").build_env(spec)
    assert "PREDICTORX_DATABASE_URL" not in env and "DATABASE_URL" not in env
    assert env["PREDICTORX_HOME"] == str(tmp_path) and env["PREDICTORX_TOKEN"] == "pxt_task"
    assert env["UNRELATED"] == "kept"
