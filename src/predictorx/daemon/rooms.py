"""Joining agents to their project's room (R-ROOM-15). Filled in with agents-room's integration API."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def room_setup(run: Any, env: Any, cwd: Path) -> tuple[list[str], dict[str, str]]:
    return [], {}
