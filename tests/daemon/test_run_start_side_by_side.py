"""What a run waits for before its agent starts (issue 9): the running report, the agents-room
configuration, the harness sweep and the context are made side by side, not one after another;
the report still reaches the server before the agent starts."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from predictorx.daemon.runner import TaskRun

STATUS_S = 0.4


class _Api:
    server_url = "http://127.0.0.1:9"

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    async def status(self, task_id: str, status: str, wait_reason: str | None = None,
                     branch_name: str | None = None) -> dict[str, Any]:
        self.at.setdefault(f"{status} sent", time.monotonic())
        await asyncio.sleep(STATUS_S)
        self.at.setdefault(f"{status} answered", time.monotonic())
        return {}

    async def call(self, method: str, path: str, body: Any = None, retries: int = 0) -> dict[str, Any]:
        if path.endswith("/harness/sweep"):
            self.at.setdefault("sweep asked", time.monotonic())
        return {}

    async def messages(self, task_id: str, batch: list[dict[str, Any]]) -> int:
        return len(batch)


class _Host:
    daemon_id, name, sandbox, task_timeout = "d-1", "test", False, None

    def __init__(self, root: Path) -> None:
        self.api = _Api()
        self.workspaces_root = root
        self.finished: dict[str, Any] = {}

    def slot_released(self) -> None:
        pass

    async def report_finish(self, task_id: str, fields: dict[str, Any]) -> None:
        self.finished = fields

    def executable_for(self, provider: str) -> None:
        return None

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
    await TaskRun(host, claim).run()  # type: ignore[arg-type]
    assert host.finished["status"] == "completed", host.finished
    at = host.api.at
    # Asked while the running report was still on its way…
    assert at["sweep asked"] < at["running answered"] and at["rooms asked"] < at["running answered"], at
    # …and the agent only after it arrived (the report reaches the server before the task can end).
    assert float(stamp.read_text()) > at["running answered"]
