"""What a run waits for before its agent starts (issue 9): the running report, the agents-room
configuration, the harness sweep and the context are made side by side, not one after another.
A CLI that reads its prompt from stdin (Claude Code) starts while the report and the sweep are on
their way and reads its prompt only once the report has arrived; any other agent starts after it."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from predictorx.daemon.retry import ServerError
from predictorx.daemon.runner import TaskRun
from predictorx.protocol import Claim

from fake_host import FakeHost

STATUS_S = 0.4


class _Api:
    server_url = "http://127.0.0.1:9"

    def __init__(self, refuse: bool = False) -> None:
        self.at: dict[str, float] = {}
        self.refuse = refuse

    async def status(self, task_id: str, status: str, wait_reason: str | None = None,
                     branch_name: str | None = None) -> dict[str, Any]:
        self.at.setdefault(f"{status} sent", time.monotonic())
        await asyncio.sleep(STATUS_S)
        self.at.setdefault(f"{status} answered", time.monotonic())
        if self.refuse:
            raise ServerError(409, "the task was cancelled meanwhile")
        return {}

    async def call(self, method: str, path: str, body: Any = None, retries: int = 0) -> dict[str, Any]:
        if path.endswith("/harness/sweep"):
            self.at.setdefault("sweep asked", time.monotonic())
        return {}

    async def messages(self, task_id: str, batch: list[dict[str, Any]]) -> int:
        return len(batch)


class _Host(FakeHost):
    def __init__(self, root: Path, refuse: bool = False) -> None:
        super().__init__(root, _Api(refuse))

    def room_setup(self, run: TaskRun, env: Any, cwd: Path) -> tuple[list[str], dict[str, str], str]:
        self.api.at.setdefault("rooms asked", time.monotonic())
        time.sleep(0.05)
        return [], {}, ""


async def test_the_running_report_the_rooms_and_the_sweep_go_side_by_side(tmp_path: Path) -> None:
    host = _Host(tmp_path / "ws")
    stamp = tmp_path / "agent-started"
    claim = {"task": {"id": "t-1", "workspace_id": "w-1"}, "issue": {"number": 3, "title": "x"}, "context": {},
             "token": "pxt_x", "agent": {"name": "a", "provider": "command", "command": [
                 sys.executable, "-c", f"import time; open({str(stamp)!r}, 'w').write(repr(time.monotonic()))"]}}
    await TaskRun(host, Claim.from_wire(claim)).run()  # type: ignore[arg-type]
    assert host.finished["status"] == "completed", host.finished
    at = host.api.at
    # Asked while the running report was still on its way…
    assert at["sweep asked"] < at["running answered"] and at["rooms asked"] < at["running answered"], at
    # …and the agent only after it arrived (the report reaches the server before the task can end).
    assert float(stamp.read_text()) > at["running answered"]


#: A stand-in `claude`: notes when it started, then when its prompt arrived and what it said.
_CLAUDE = """
import json, os, sys, time
started = time.monotonic()
prompt = sys.stdin.read()
# written whole or not at all: a refused run stops this process, maybe between an open and its write
open(sys.argv[1] + ".part", "w").write(json.dumps({"started": started, "read": time.monotonic(), "prompt": prompt}))
os.replace(sys.argv[1] + ".part", sys.argv[1])
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "ok", "session_id": "s-1"}))
"""


def _claude_claim(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    script, seen = tmp_path / "claude.py", tmp_path / "seen.json"
    script.write_text(_CLAUDE)
    return {"task": {"id": "t-1", "workspace_id": "w-1"}, "issue": {"number": 3, "title": "Fix the login"},
            "context": {}, "token": "pxt_x",
            "agent": {"name": "c", "provider": "claude", "command": [sys.executable, str(script), str(seen)]}}, seen


async def test_claude_starts_beside_the_running_report_and_reads_its_prompt_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IS_SANDBOX", "1")  # (these tests may run as root)
    host = _Host(tmp_path / "ws")
    claim, seen = _claude_claim(tmp_path)
    await TaskRun(host, Claim.from_wire(claim)).run()  # type: ignore[arg-type]
    assert host.finished["status"] == "completed", host.finished
    at, agent = host.api.at, json.loads(seen.read_text())
    assert agent["started"] < at["running answered"], "the CLI waited for the running report to start"
    assert agent["read"] > at["running answered"], "the CLI had its prompt before the running report was in"
    assert "Fix the login" in agent["prompt"] and "## Session start" in agent["prompt"]  # the sweep is its tail


async def test_a_refused_running_report_stops_claude_before_it_reads_a_prompt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IS_SANDBOX", "1")
    host = _Host(tmp_path / "ws", refuse=True)
    claim, seen = _claude_claim(tmp_path)
    run = TaskRun(host, Claim.from_wire(claim))
    await run.run()  # type: ignore[arg-type]
    # The refusal is the outcome (as when the report was awaited before the start), not a cancel.
    assert host.finished["status"] == "failed" and "cancelled meanwhile" in host.finished["failure_reason"]
    assert not run.cancel_event.is_set()
    assert not seen.exists() or json.loads(seen.read_text())["prompt"] == ""
