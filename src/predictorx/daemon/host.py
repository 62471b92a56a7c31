"""What one task's run (`runner.TaskRun`) needs from the daemon that runs it, as a Protocol: the
server connection, where and as whom it runs, the shared locks and caches, the execution slots and
two services (the agent's executable, its agents-room set-up). `main.Daemon` is one; a test or
another host can be another, and the runner imports nothing of `main`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from .dirlock import DirLocks
from .repocache import RepoCache
from .rooms import RoomRun
from .serverapi import ServerApi


class RunHost(Protocol):
    api: ServerApi
    daemon_id: str
    name: str
    sandbox: bool | None           # True: every run sandboxed; False: none; None: as each agent says
    workspaces_root: Path
    dir_locks: DirLocks            # one task at a time in a person's folder (R-LD-4)
    repo_cache: RepoCache
    task_timeout: float | None

    def slot_released(self, finish_follows: bool = False) -> None:
        """The run gave its execution slot back (it waits, or it is done: `finish_follows`)."""

    async def acquire_slot(self) -> None:
        """Wait for an execution slot (after waiting for a folder)."""

    async def release(self, task_id: str) -> None:
        """Hand an unstarted task back to the queue (the daemon is stopping)."""

    async def report_finish(self, task_id: str, fields: dict[str, Any]) -> None:
        """Tell the server how the task ended, however long that takes."""

    def executable_for(self, provider: str) -> list[str] | None:
        """The agent CLI's command this daemon found, if not the adapter's default."""

    def room_setup(self, run: RoomRun, env_root: Path, cwd: Path) -> tuple[list[str], dict[str, str], str]:
        """The agent's extra arguments, environment and prompt text for its project's agents-room room."""
