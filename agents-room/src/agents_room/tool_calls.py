"""What each MCP tool does, without the MCP SDK: one call on the room per tool (issue 30).

The SDK server (mcp_server.py) declares the tools — their arguments, descriptions and schemas —
and its tool bodies call these; the stdio front (mcp_stdio.py, direct_call.py) calls them itself
for arguments that plainly fit the listed schema, without importing the SDK (about half a second
of CPU at a session's first tool call). Every argument is passed (the caller fills the defaults
its schema gives), and `tools.call(method, …)` runs a Room method and raises the caller's
failure for an anticipated error; `tools.fail(text)` raises it for the tool's own refusal.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from .sqlite_api import sqlite3
from .room import Room, RoomError
from .store import StoreError


class Tools:
    """The room the tools act on, opened at the first call, and `failure`: what a failed tool raises
    (the SDK's ToolError under the SDK server; direct_call's own in the front)."""

    def __init__(self, db_path: str | Path | None, failure: type[Exception]) -> None:
        self.db_path, self.failure = db_path, failure
        self._room: Room | None = None
        # A call is one short SQLite transaction (~0.1 ms), made inline; the lock keeps one caller on
        # the connection at a time should a caller ever come from another thread.
        self._lock = threading.Lock()

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            with self._lock:
                if self._room is None:
                    self._room = Room.open(self.db_path)
                return getattr(self._room, method)(*args, **kwargs)
        except RoomError as exc:
            raise self.failure(str(exc)) from None
        except (StoreError, sqlite3.Error, ValueError, OSError) as exc:
            # anticipated failures outside the room's own rules: say what happened and what to do,
            # rather than the SDK's bare "Error executing tool" and a traceback on stderr
            raise self.failure(f"{type(exc).__name__}: {exc}. Hint: {_hint(exc, self.db_path)}") from None

    def fail(self, text: str) -> Exception:
        return self.failure(text)


def _hint(exc: BaseException, db_path: str | Path | None) -> str:
    from .store import default_db_path

    try:
        store = str(db_path) if db_path is not None else str(default_db_path())
    except Exception:  # noqa: BLE001 — a broken HOME must not hide the original error  # pragma: no cover
        store = "$AGENTS_ROOM_DB or ~/.agents-room/room.db"
    if isinstance(exc, StoreError):
        return f"the store {store} cannot be used by this agents-room; run `agents-room doctor` in a shell"
    if isinstance(exc, sqlite3.Error):
        return f"the store {store} could not be read or written; retry, and run `agents-room doctor` if it persists"
    if isinstance(exc, ValueError):
        return "check this call's arguments (paths and cwd must be plain text, without NUL characters)"
    return f"check that the path exists and is accessible, and that the store {store} is writable"


def room_join(tools: Tools, rooms: Any, session: Any, label: Any, tags: Any, autonomy: Any, cwd: Any,
              harness: Any) -> Any:
    from . import liveness

    return tools.call("join", session=session, rooms=rooms, label=label, tags=tags, autonomy=autonomy,
                      harness=harness or os.environ.get("AGENTS_ROOM_HARNESS"),
                      cwd=cwd or (None if session else os.getcwd()),  # a rejoin keeps its repo unless cwd is given
                      pid=liveness.harness_pid())


def room_leave(tools: Tools, session: Any, rooms: Any) -> Any:
    return tools.call("leave", session, rooms)


def room_who(tools: Tools, session: Any, room: Any) -> Any:
    return tools.call("who", session=session, room=room)


def room_history(tools: Tools, session: Any, room: Any, limit: Any, before: Any) -> Any:
    return tools.call("history", session, room, limit, before)


def msg_send(tools: Tools, session: Any, body: Any, to: Any, subject: Any, ttl_seconds: Any, room: Any,
             reply_to: Any, importance: Any, ack_required: Any) -> Any:
    return tools.call("send", session, to, body, subject=subject, ttl=ttl_seconds, room=room, reply_to=reply_to,
                      importance=importance, ack_required=ack_required)


def msg_recv(tools: Tools, session: Any, limit: Any) -> Any:
    return tools.call("recv", session, limit)


def msg_unread(tools: Tools, session: Any) -> Any:
    return tools.call("unread", session)


def msg_sent(tools: Tools, session: Any, limit: Any) -> Any:
    return tools.call("sent", session, limit)


def msg_ack(tools: Tools, session: Any, message_ids: Any) -> Any:
    return tools.call("ack", session, message_ids)


def msg_thread(tools: Tools, session: Any, message_id: Any) -> Any:
    return tools.call("thread", session, message_id)


def msg_search(tools: Tools, session: Any, query: Any, room: Any, limit: Any) -> Any:
    return tools.call("search", session, query, limit, room)


def lease_acquire(tools: Tools, session: Any, paths: Any, mode: Any, ttl_seconds: Any) -> Any:
    res = tools.call("lease_acquire", session, paths, mode, ttl_seconds)
    if res.get("conflicts"):
        import json

        raise tools.fail(f"CONFLICT: {res['message']}. Conflicts: {json.dumps(res['conflicts'])}")
    return res


def lease_renew(tools: Tools, session: Any, paths: Any, ttl_seconds: Any) -> Any:
    return tools.call("lease_renew", session, paths, ttl_seconds)


def lease_release(tools: Tools, session: Any, paths: Any) -> Any:
    return tools.call("lease_release", session, paths)


def file_read(tools: Tools, session: Any, path: Any, content_hash: Any) -> Any:
    return tools.call("file_read", session, path, content_hash)


def file_check(tools: Tools, session: Any, paths: Any) -> Any:
    return tools.call("file_check", session, paths)


#: the tools by name, as listed
BY_NAME = {f.__name__: f for f in (room_join, room_leave, room_who, room_history, msg_send, msg_recv, msg_unread,
                                   msg_sent, msg_ack, msg_thread, msg_search, lease_acquire, lease_renew,
                                   lease_release, file_read, file_check)}
