"""Where each agent CLI session ran on this machine, so a follow-up can continue it (R-EX-10).

Claude Code and Codex find a session by its id from any folder. Gemini CLI and OpenCode keep a
session under the folder it ran in: asked to resume it elsewhere, Gemini fails and OpenCode
waits forever. For those the daemon resumes only in the same folder — an in-place task's, not a
new worktree's — and starts a new session otherwise. One small file per session, in the daemon's
state dir.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .. import config


def _record(session_id: str) -> Path:
    digest = hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]
    return config.state_dir() / "sessions" / f"{digest}.json"


def remember(provider: str, session_id: str, cwd: Path) -> None:
    path = _record(session_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"provider": provider, "session_id": session_id, "cwd": str(cwd)}))
    os.replace(tmp, path)


def folder_of(session_id: str) -> str | None:
    try:
        return json.loads(_record(session_id).read_text()).get("cwd")
    except (OSError, ValueError):
        return None
