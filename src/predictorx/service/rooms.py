"""A project's agents-room room, read-only, for its page (issue 13 §4, R-ROOM-15).

agents-room is its own program: this reads it through the `agents-room` command's JSON output
(`who --json`, `history --json`), never by importing it. The store is the one the daemon's agents
use on this machine ($AGENTS_ROOM_DB or ~/.agents-room/room.db); when it does not exist, or the
command is missing or fails, the page says so instead of creating a store.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agentsroom import agents_room_command, project_room

TIMEOUT_S = 10.0
HISTORY_LIMIT = 100


@dataclass
class RoomView:
    name: str                                   # shared:project-…
    available: bool = False
    why: str | None = None                      # when not available: one sentence
    sessions: list[dict[str, Any]] = field(default_factory=list)
    leases: list[dict[str, Any]] = field(default_factory=list)
    threads: list[dict[str, Any]] = field(default_factory=list)


def store_path() -> Path:
    return Path(os.environ.get("AGENTS_ROOM_DB") or Path.home() / ".agents-room" / "room.db")


def _run(args: list[str]) -> dict[str, Any]:
    cmd = agents_room_command()
    if cmd is None:
        raise RuntimeError("the agents-room command is not installed here")
    res = subprocess.run([*cmd, "--db", str(store_path()), *args], capture_output=True, text=True,
                         timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        raise RuntimeError((res.stderr.strip() or f"agents-room exited {res.returncode}").splitlines()[-1])
    return json.loads(res.stdout)


_MESSAGE_KEYS = ("id", "thread", "reply_to", "from", "from_label", "to", "body", "sent_at", "importance")
_SESSION_KEYS = ("session", "label", "harness", "state", "last_seen", "cwd")
_LEASE_KEYS = ("pattern", "mode", "expires_at")


def _shape(item: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """agents-room's JSON with every key the page reads present (None when it was not sent), so a
    field it drops or renames shows as blank instead of breaking the page."""
    item = item if isinstance(item, dict) else {}
    return {k: item.get(k) for k in keys}


def _threads(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages in agents-room's threads (a reply carries its thread's root id as `thread`; a
    message nobody answered is a thread of one), the thread with the newest message first."""
    threads: dict[Any, dict[str, Any]] = {}
    for m in messages:
        key = m.get("thread") or m.get("id")
        t = threads.setdefault(key, {"id": key, "messages": [], "last": ""})
        t["messages"].append(m)
        t["last"] = max(t["last"], str(m.get("sent_at") or ""))
    for t in threads.values():
        t["messages"].sort(key=lambda m: m.get("id") or 0)
        t["root"] = t["messages"][0]
    return sorted(threads.values(), key=lambda t: t["last"], reverse=True)


def project_room_view(project_id: str, title: str | None) -> RoomView:
    view = RoomView(name=f"shared:{project_room(project_id, title)}")
    if not store_path().exists():
        view.why = (f"No agents-room store on this machine yet ({store_path()}); it appears when the first "
                    "Claude Code or Codex run joins its project's room.")
        return view
    try:
        who = _run(["who", "--room", view.name, "--all", "--json"])
        sessions = [s for s in (who.get("sessions") or []) if isinstance(s, dict)]
        live = [s for s in sessions if s.get("state") != "ended"]
        view.sessions = [_shape(s, _SESSION_KEYS) for s in live]
        view.leases = [{**_shape(lease, _LEASE_KEYS), "holder": s.get("label") or s.get("session")}
                       for s in live for lease in (s.get("leases") or [])]
        reader = next((s["session"] for s in sessions if s.get("session")), None)
        if reader is not None:  # history reads with any member's id; reading changes nothing
            history = _run(["history", "--session", reader, "--room", view.name, "--limit", str(HISTORY_LIMIT), "--json"])
            view.threads = _threads([_shape(m, _MESSAGE_KEYS) for m in history.get("messages") or []])
    except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
        view.why = f"The room store could not be read: {e}"
        return view
    view.available = True
    return view
