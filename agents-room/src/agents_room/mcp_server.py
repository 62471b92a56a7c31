"""MCP server over stdio (``agents-room mcp``, R-ROOM-2), built on the official SDK's MCPServer.

Stateless: every tool except ``room_join`` takes the explicit ``session`` id that
``room_join`` returned. Optional arguments default to ``None`` meaning "not
given", which is different from any value (a rejoin that omits ``autonomy``
keeps the stored level).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from . import tool_calls

INSTRUCTIONS = """agents-room connects you with agents in other repositories (and other chats in this one).
Your session id is given at session start (it looks like s-1a2b3c4d); if you have none, call room_join.
Pass that id as `session` to every other tool. Read messages with msg_recv when nudged.
Before editing files others may touch, take a lease (lease_acquire); record what you read with
file_read and check divergence with file_check before editing."""


# parameter types shared by several tools; each carries the description the model reads
S = Annotated[str, Field(description="your session id, as room_join returned it (looks like s-1a2b3c4d)")]
Paths = Annotated[list[str], Field(description="files or globs, relative to your session's cwd or absolute, inside your repository (e.g. src/api/**)")]
Ttl = Annotated[float | None, Field(description="seconds until it lapses; finite and positive (messages: at most 30 days; leases: at most 24 hours). Omit for the default")]
Room_ = Annotated[str | None, Field(description="a room you are in, e.g. shared:storefront or repo:api; omit for all your rooms")]


def build_server(db_path: str | Path | None = None) -> MCPServer:
    app = MCPServer("agents-room", instructions=INSTRUCTIONS, log_level="WARNING")
    # Tools are async and call the room inline (tool_calls.Tools): a call is one short SQLite
    # transaction (~0.1 ms), far cheaper than the SDK's hop to a worker thread (msg_recv p95 19 -> 15 ms
    # at load 10). Each body is the tool's one call (tool_calls.py), which the stdio front also makes itself.
    tools = tool_calls.Tools(db_path, ToolError)

    @app.tool()
    async def room_join(
        rooms: Annotated[list[str] | None, Field(description="shared rooms to join; 'storefront' and 'shared:storefront' are one room")] = None,
        session: Annotated[str | None, Field(description="your existing session id to rejoin or add rooms; omit on first join")] = None,
        label: Annotated[str | None, Field(description="a short name others see in room_who (e.g. 'api agent')")] = None,
        tags: Annotated[list[str] | None, Field(description="tags others can address you by with to='tag:<tag>'")] = None,
        autonomy: Annotated[int | str | None, Field(description="0/notify, 1/hold or 2/wake; omit to keep your current level (a lower one lowers it, with a warning)")] = None,
        cwd: Annotated[str | None, Field(description="your working directory; its git repository gives your repo room. A rejoin with session keeps its repo unless cwd is given")] = None,
        harness: Annotated[str | None, Field(description="your harness, e.g. claude or codex")] = None,
    ) -> dict[str, Any]:
        """Join your repo room (automatic, from the git repository of cwd) and any shared rooms.
        Returns your session id: pass it as `session` to every other tool."""
        return tool_calls.room_join(tools, rooms, session, label, tags, autonomy, cwd, harness)

    @app.tool()
    async def room_leave(session: S, rooms: Annotated[list[str] | None, Field(description="rooms to leave; omit to end the session (leaves every room, releases every lease)")] = None) -> dict[str, Any]:
        """Leave the given rooms; with no rooms, end the session."""
        return tool_calls.room_leave(tools, session, rooms)

    @app.tool()
    async def room_who(session: S, room: Room_ = None) -> dict[str, Any]:
        """Sessions sharing a room with you (or in `room`): label, repo, state (live/gone/no-pid), autonomy, tags, last seen, leases."""
        return tool_calls.room_who(tools, session, room)

    @app.tool()
    async def room_history(
        session: S, room: Room_ = None,
        limit: Annotated[int, Field(description="at most this many messages (1-500)")] = 50,
        before: Annotated[int | None, Field(description="page back: only messages with an id below this")] = None,
    ) -> dict[str, Any]:
        """Messages in your rooms (or one of them), oldest first, with their thread ids."""
        return tool_calls.room_history(tools, session, room, limit, before)

    @app.tool()
    async def msg_send(
        session: S,
        body: Annotated[str, Field(description="the message (at most 64 KiB); send a summary and point to files for more")],
        to: Annotated[str | None, Field(description="'*' or 'all' (everyone in your rooms, or in `room`), a session id, 'file:<glob>' (sessions holding a matching lease; 'file:repo:<name>/<glob>' for another repo), 'tag:<tag>'; comma-separate several. May be omitted on a reply")] = None,
        subject: Annotated[str | None, Field(description="a short subject, shown as [subject] before the body")] = None,
        ttl_seconds: Ttl = None,
        room: Room_ = None,
        reply_to: Annotated[int | None, Field(description="the id of the message this answers: the reply joins its thread and reaches the thread's participants")] = None,
        importance: Annotated[str | None, Field(description="low, normal (default), high or urgent; urgent is named first in the recipient's nudge")] = None,
        ack_required: Annotated[bool, Field(description="ask each recipient to confirm with msg_ack; msg_sent shows who did")] = False,
    ) -> dict[str, Any]:
        """Send a message. Returns its id, thread and the recipient count; zero recipients is allowed and said,
        a selector that can match nobody is an error."""
        return tool_calls.msg_send(tools, session, body, to, subject, ttl_seconds, room, reply_to, importance, ack_required)

    @app.tool()
    async def msg_recv(session: S, limit: Annotated[int, Field(description="at most this many messages (1-500); bodies are capped at 256 KiB per call")] = 50) -> dict[str, Any]:
        """Fetch and mark read your unread messages, oldest first. When there are none, `empty_because` says why;
        when more remain, `remaining` counts them up to 500 (`remaining_more: true`: more than that)."""
        return tool_calls.msg_recv(tools, session, limit)

    @app.tool()
    async def msg_unread(session: S) -> dict[str, Any]:
        """Count (up to 500; `unread_more: true`: more than that) and preview (the oldest 200) unread messages
        without marking them read."""
        return tool_calls.msg_unread(tools, session)

    @app.tool()
    async def msg_sent(session: S, limit: Annotated[int, Field(description="at most this many of your latest messages (1-200)")] = 20) -> dict[str, Any]:
        """Messages you sent, each recipient's label and delivery state (stored/offered/read/expired) and who acknowledged."""
        return tool_calls.msg_sent(tools, session, limit)

    @app.tool()
    async def msg_ack(session: S, message_ids: Annotated[list[int], Field(description="ids of messages addressed to you that you acknowledge")]) -> dict[str, Any]:
        """Acknowledge messages (those with ack_required ask for it); the sender sees it in msg_sent."""
        return tool_calls.msg_ack(tools, session, message_ids)

    @app.tool()
    async def msg_thread(session: S, message_id: Annotated[int, Field(description="any message id of the thread")]) -> dict[str, Any]:
        """The whole thread of a message, oldest first, and its participants."""
        return tool_calls.msg_thread(tools, session, message_id)

    @app.tool()
    async def msg_search(
        session: S,
        query: Annotated[str, Field(description="words that must all occur; \"a quoted phrase\"; prefix* matches word starts")],
        room: Room_ = None,
        limit: Annotated[int, Field(description="at most this many results (1-200)")] = 20,
    ) -> dict[str, Any]:
        """Full-text search over the messages you may see (sent by you, addressed to you, or in your rooms), best match first."""
        return tool_calls.msg_search(tools, session, query, room, limit)

    @app.tool()
    async def lease_acquire(
        session: S, paths: Paths,
        mode: Annotated[str, Field(description="'exclusive' (nobody else may lease an overlapping path) or 'shared'")] = "exclusive",
        ttl_seconds: Ttl = None,
    ) -> dict[str, Any]:
        """Lease files or globs in your repo, all or nothing (default 15 minutes; renew with lease_renew).
        A conflict is an error whose first word is CONFLICT, naming the holder, its repo and expiry."""
        return tool_calls.lease_acquire(tools, session, paths, mode, ttl_seconds)

    @app.tool()
    async def lease_renew(session: S, paths: Annotated[list[str] | None, Field(description="patterns or lease ids to renew; omit for all yours")] = None, ttl_seconds: Ttl = None) -> dict[str, Any]:
        """Extend your leases. An answer without renewals says whether a lease was lost, and to whom."""
        return tool_calls.lease_renew(tools, session, paths, ttl_seconds)

    @app.tool()
    async def lease_release(session: S, paths: Annotated[list[str] | None, Field(description="patterns or lease ids to release; omit for all yours")] = None) -> dict[str, Any]:
        """Release your leases."""
        return tool_calls.lease_release(tools, session, paths)

    @app.tool()
    async def file_read(session: S, path: Annotated[str, Field(description="the file you read, relative to your session's cwd or absolute")], content_hash: Annotated[str | None, Field(description="its hash if you have it; otherwise it is hashed from disk")] = None) -> dict[str, Any]:
        """Record the content hash of a file you read, for divergence checks."""
        return tool_calls.file_read(tools, session, path, content_hash)

    @app.tool()
    async def file_check(session: S, paths: Annotated[list[str] | None, Field(description="files to check; omit for every file you recorded")] = None) -> dict[str, Any]:
        """Which files you read have changed since, and by which session/repo."""
        return tool_calls.file_check(tools, session, paths)

    return app


def run(db_path: str | Path | None = None) -> None:
    build_server(db_path).run("stdio")
