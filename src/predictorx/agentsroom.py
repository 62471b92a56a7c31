"""The agents-room program as Predictor X sees it: where its command is and how a project's room
is named (R-ROOM-15). The daemon (joining a run to the room) and the server (showing the room on
the project page) both need these, so they live here and neither imports the other.

agents-room is its own distribution (GPL-3.0-or-later); Predictor X only runs its command."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

_SLUG = re.compile(r"[^a-z0-9]+")


def project_room(project_id: str, title: str | None) -> str:
    """Readable and unique: two projects called "API" in two workspaces are two rooms."""
    slug = _SLUG.sub("-", (title or "").lower()).strip("-")[:40] or "project"
    return f"project-{slug}-{project_id[:8]}"


def agents_room_command() -> list[str] | None:
    """The `agents-room` program: $PREDICTORX_AGENTS_ROOM, else beside this interpreter, else on PATH."""
    override = os.environ.get("PREDICTORX_AGENTS_ROOM")
    if override:
        return [override]
    beside = Path(sys.executable).with_name("agents-room")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("agents-room")
    return [found] if found else None
