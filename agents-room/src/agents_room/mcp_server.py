"""MCP server over stdio (``agents-room mcp``), built on the official SDK's MCPServer.

Stateless: every tool except ``room_join`` takes the explicit ``session`` id that
``room_join`` returned. Optional arguments default to ``None`` meaning "not
given", which is different from any value (a rejoin that omits ``autonomy``
keeps the stored level).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from . import liveness
from .room import Room, RoomError
from .store import StoreError

INSTRUCTIONS = """agents-room connects you with agents in other repositories (and other chats in this one).
Your session id is given at session start (it looks like s-1a2b3c4d); if you have none, call room_join.
Pass that id as `session` to every other tool. Read messages with msg_recv when nudged.
Before editing files others may touch, take a lease (lease_acquire); record what you read with
file_read and check divergence with file_check before editing."""


def build_server(db_path: str | Path | None = None) -> MCPServer:
    app = MCPServer("agents-room", instructions=INSTRUCTIONS, log_level="WARNING")
    state: dict[str, Room] = {}
    lock = threading.Lock()  # sync tools run in worker threads; one connection, one caller at a time

    def room() -> Room:
        if "room" not in state:
            state["room"] = Room.open(db_path)
        return state["room"]

    def call(method: str, *args, **kwargs) -> Any:
        try:
            with lock:
                return getattr(room(), method)(*args, **kwargs)
        except RoomError as exc:
            raise ToolError(str(exc)) from None
        except (StoreError, sqlite3.Error, ValueError, OSError) as exc:
            # anticipated failures outside the room's own rules: say what happened and what to do,
            # rather than the SDK's bare "Error executing tool" and a traceback on stderr
            raise ToolError(f"{type(exc).__name__}: {exc}. Hint: {_hint(exc, db_path)}") from None

    @app.tool()
    def room_join(
        rooms: list[str] | None = None,
        session: str | None = None,
        label: str | None = None,
        tags: list[str] | None = None,
        autonomy: int | None = None,
        cwd: str | None = None,
        harness: str | None = None,
    ) -> dict[str, Any]:
        """Join your repo room (automatic, from the git repository of cwd) and any shared rooms.

        rooms: shared room names ('storefront' and 'shared:storefront' are one room).
        session: your existing session id, to rejoin or add rooms. Omit on first join.
        cwd: your working directory (default: this server's). A rejoin with `session` keeps the
        session's repo room unless cwd is given.
        autonomy: 0 notify, 1 hold, 2 wake. Omit to keep the current level; a lower value lowers it (with a warning).
        Returns your session id: pass it as `session` to every other tool.
        """
        return call("join",
            session=session,
            rooms=rooms,
            label=label,
            tags=tags,
            autonomy=autonomy,
            harness=harness or os.environ.get("AGENTS_ROOM_HARNESS"),
            cwd=cwd or (None if session else os.getcwd()),  # a rejoin keeps its repo unless cwd is given
            pid=liveness.harness_pid(),
        )

    @app.tool()
    def room_leave(session: str, rooms: list[str] | None = None) -> dict[str, Any]:
        """Leave the given rooms; with no rooms, end the session (leaves every room, releases every lease)."""
        return call("leave", session, rooms)

    @app.tool()
    def room_who(session: str, room: str | None = None) -> dict[str, Any]:
        """Sessions sharing a room with you (or in `room`): label, repo, state (live/gone/no-pid), autonomy, leases."""
        return call("who", session=session, room=room)

    @app.tool()
    def room_history(session: str, room: str | None = None, limit: int = 50, before: int | None = None) -> dict[str, Any]:
        """Messages in your rooms (or one of them), oldest first; `before` pages back by message id."""
        return call("history", session, room, limit, before)

    @app.tool()
    def msg_send(
        session: str, to: str, body: str, subject: str | None = None, ttl_seconds: float | None = None, room: str | None = None
    ) -> dict[str, Any]:
        """Send a message. `to`: '*' (everyone in your rooms, or in `room`), a session id, 'file:<glob>'
        (sessions holding a matching lease; 'file:repo:<name>/<glob>' for another repo), 'tag:<tag>';
        comma-separate several. Returns the recipient count; zero is allowed and said."""
        return call("send", session, to, body, subject=subject, ttl=ttl_seconds, room=room)

    @app.tool()
    def msg_recv(session: str, limit: int = 50) -> dict[str, Any]:
        """Fetch and mark read your unread messages. When there are none, `empty_because` says why."""
        return call("recv", session, limit)

    @app.tool()
    def msg_unread(session: str) -> dict[str, Any]:
        """Count and preview unread messages without marking them read."""
        return call("unread", session)

    @app.tool()
    def msg_sent(session: str, limit: int = 20) -> dict[str, Any]:
        """Messages you sent, with each recipient's delivery state (stored/offered/read/expired)."""
        return call("sent", session, limit)

    @app.tool()
    def lease_acquire(session: str, paths: list[str], mode: str = "exclusive", ttl_seconds: float | None = None) -> dict[str, Any]:
        """Lease files or globs in your repo (all or nothing). mode 'exclusive' or 'shared'. A conflict names
        the holder, its repo and expiry. Default TTL 15 minutes; renew with lease_renew. Relative paths
        are relative to your session's cwd; patterns are stored and shown relative to the repo root."""
        return call("lease_acquire", session, paths, mode, ttl_seconds)

    @app.tool()
    def lease_renew(session: str, paths: list[str] | None = None, ttl_seconds: float | None = None) -> dict[str, Any]:
        """Extend your leases (all, or the given patterns/ids)."""
        return call("lease_renew", session, paths, ttl_seconds)

    @app.tool()
    def lease_release(session: str, paths: list[str] | None = None) -> dict[str, Any]:
        """Release your leases (all, or the given patterns/ids)."""
        return call("lease_release", session, paths)

    @app.tool()
    def file_read(session: str, path: str, content_hash: str | None = None) -> dict[str, Any]:
        """Record the content hash of a file you read (hashed from disk unless given), for divergence checks.
        A relative path is relative to your session's cwd."""
        return call("file_read", session, path, content_hash)

    @app.tool()
    def file_check(session: str, paths: list[str] | None = None) -> dict[str, Any]:
        """Which files you read have changed since, and by which session/repo."""
        return call("file_check", session, paths)

    return app


def _hint(exc: BaseException, db_path: str | Path | None) -> str:
    from .store import default_db_path

    try:
        store = str(db_path) if db_path is not None else str(default_db_path())
    except Exception:  # pragma: no cover - a broken HOME must not hide the original error
        store = "$AGENTS_ROOM_DB or ~/.agents-room/room.db"
    if isinstance(exc, StoreError):
        return f"the store {store} cannot be used by this agents-room; run `agents-room doctor` in a shell"
    if isinstance(exc, sqlite3.Error):
        return f"the store {store} could not be read or written; retry, and run `agents-room doctor` if it persists"
    if isinstance(exc, ValueError):
        return "check this call's arguments (paths and cwd must be plain text, without NUL characters)"
    return f"check that the path exists and is accessible, and that the store {store} is writable"


def run(db_path: str | Path | None = None) -> None:
    build_server(db_path).run("stdio")
