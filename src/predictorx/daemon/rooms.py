"""Joining every agent run to its project's room (R-ROOM-15).

Agents of one project often work in different repositories (an API here, its clients there) and
cannot see each other. For harnesses agents-room integrates with (Claude Code, Codex), the daemon
adds agents-room's MCP server and hooks to that one run — never to the person's own harness
config — so the agent joins `shared:project-<name>` and its repo room at session start and can
talk to its project's other agents without setup. Best effort: a failure here never stops a task.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .runner import TaskRun

log = logging.getLogger("predictorx.daemon")
_SLUG = re.compile(r"[^a-z0-9]+")


def project_room(project_id: str, title: str | None) -> str:
    """Readable and unique: two projects called "API" in two workspaces are two rooms."""
    slug = _SLUG.sub("-", (title or "").lower()).strip("-")[:40] or "project"
    return f"project-{slug}-{project_id[:8]}"


def room_setup(run: "TaskRun", env: Any, cwd: Path) -> tuple[list[str], dict[str, str]]:
    if os.environ.get("PREDICTORX_ROOMS", "1") == "0":
        return [], {}
    provider = run.agent["provider"]
    try:
        from agents_room.integration import SUPPORTED, prepare_agent_run
    except ImportError:  # agents-room is part of the distribution; tolerate a trimmed install
        return [], {}
    if provider not in SUPPORTED:
        return [], {}
    ctx = run.context_data
    rooms = [project_room(ctx["project_id"], ctx.get("project_title"))] if ctx.get("project_id") else []
    label = f"{run.agent['name']} · issue #{run.issue['number']}"
    if ctx.get("project_title"):
        label += f" · {ctx['project_title']}"
    try:
        cfg = prepare_agent_run(provider, config_dir=Path(env.path) / "agents-room", rooms=rooms, label=label,
                                db_path=None, cwd=cwd)
    except Exception as e:  # noqa: BLE001 — coordination is a help, never a reason to fail
        log.warning("task %s runs without agents-room: %s", run.id, e)
        return [], {}
    return cfg.args, cfg.env
