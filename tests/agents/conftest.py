"""Fixtures for the agent adapter tests: the fakes on PATH, a task-like directory, a runner."""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from predictorx.agents import AgentMessage, RunResult, RunSpec, get

FAKES_DIR = Path(__file__).resolve().parents[1] / "fakes"
TASK_ENV = {
    "PREDICTORX_TOKEN": "task-token-123",
    "PREDICTORX_SERVER_URL": "http://127.0.0.1:9",
    "PREDICTORX_TASK_ID": "task-1",
}


@dataclass
class Task:
    """A working directory laid out the way the daemon lays one out, and where the fake reports."""

    root: Path
    workdir: Path
    logs: Path
    record_path: Path
    env: dict[str, str] = field(default_factory=dict)

    def spec(self, prompt: str = "Fix the bug in README.md", **kwargs) -> RunSpec:
        env = {**self.env, **kwargs.pop("env", {})}
        return RunSpec(prompt=prompt, cwd=self.workdir, env=env, logs_dir=self.logs, **kwargs)

    def record(self) -> dict:
        return json.loads(self.record_path.read_text())

    async def wait_for_record(self, key: str, timeout: float = 10.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.record_path.exists():
                record = self.record()
                if key in record:
                    return record
            await asyncio.sleep(0.02)
        raise AssertionError(f"the fake never recorded {key!r}")


@pytest.fixture
def task(tmp_path: Path) -> Task:
    workdir = tmp_path / "workdir"
    (workdir / ".predictorx" / "project").mkdir(parents=True)
    (workdir / ".predictorx" / "project" / "resources.json").write_text(
        json.dumps({"project_id": "p1", "project_title": "Demo", "resources": []})
    )
    for name in ("CLAUDE.md", "AGENTS.md", "GEMINI.md"):
        (workdir / name).write_text(f"instructions in {name}\n")
    record_path = tmp_path / "record.json"
    env = {
        "PATH": os.pathsep.join([str(FAKES_DIR), os.environ.get("PATH", os.defpath)]),
        "FAKE_AGENT_RECORD": str(record_path),
        **TASK_ENV,
    }
    return Task(tmp_path, workdir, tmp_path / "logs", record_path, env)


async def run_agent(
    provider: str, spec: RunSpec, cancel: asyncio.Event | None = None
) -> tuple[list[AgentMessage], RunResult]:
    messages: list[AgentMessage] = []

    async def collect(message: AgentMessage) -> None:
        messages.append(message)

    result = await get(provider).run(spec, collect, cancel or asyncio.Event())
    return messages, result
