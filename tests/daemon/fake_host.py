"""The daemon a TaskRun runs for, faked: what a run asks of its host (runner.py), with `api` the
test's own fake ServerApi. Tests that watch a step override it (e.g. `room_setup`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class FakeHost:
    daemon_id, name, sandbox, task_timeout = "d-1", "test", False, None

    def __init__(self, root: Path, api: Any) -> None:
        self.api = api
        self.workspaces_root = root
        self.finished: dict[str, Any] = {}

    def slot_released(self, finish_follows: bool = False) -> None:
        pass

    async def report_finish(self, task_id: str, fields: dict[str, Any]) -> None:
        self.finished = fields

    def executable_for(self, provider: str) -> None:
        return None

    def room_setup(self, run: Any, env: Any, cwd: Path) -> tuple[list[str], dict[str, str], str]:
        return [], {}, ""
