"""What the daemon's agents-room tests share: one run to join to its rooms, and a repository for it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from predictorx.daemon import rooms


def room_run(provider: str = "claude") -> rooms.RoomRun:
    return rooms.RoomRun(task_id="t-1", provider=provider, agent_name="claude-1", issue_number=7,
                         project_id="0123456789abcdef", project_title="Shop")


def repo(tmp_path: Path) -> Path:
    path = tmp_path / "shop"
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True, timeout=30)
    return path
