"""R-ROOM-2: the MCP server, in process and over stdio with the SDK's own client."""

import json
import os
import sys

import pytest

from mcp import Client, StdioServerParameters

from agents_room.mcp_server import build_server

TOOLS = {
    "room_join", "room_leave", "room_who", "room_history", "msg_send", "msg_recv", "msg_unread", "msg_sent",
    "lease_acquire", "lease_renew", "lease_release", "file_read", "file_check", "msg_ack", "msg_thread", "msg_search",
}


def data(result):
    assert not result.is_error, result.content[0].text
    return result.structured_content if result.structured_content is not None else json.loads(result.content[0].text)


async def test_in_process_tools(db, repos):
    async with Client(build_server(db)) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert names == TOOLS
        tools = {t.name: t for t in (await c.list_tools()).tools}
        for name in TOOLS - {"room_join"}:
            assert "session" in tools[name].input_schema["required"], name
        a = data(await c.call_tool("room_join", {"rooms": ["storefront"], "cwd": str(repos["api"]), "autonomy": 2}))
        # another chat (its own harness process) joins through the API
        from agents_room.room import Room

        other = Room.open(db)
        b = other.join(rooms=["shared:storefront"], cwd=str(repos["web"]))
        other.close()
        # a rejoin that omits autonomy keeps it (not given != 0)
        again = data(await c.call_tool("room_join", {"session": a["session"], "rooms": ["x"]}))
        assert again["autonomy"] == "wake"
        sent = data(await c.call_tool("msg_send", {"session": a["session"], "to": "*", "body": "hi"}))
        assert sent["recipients"] == 1
        got = data(await c.call_tool("msg_recv", {"session": b["session"]}))
        assert [m["body"] for m in got["messages"]] == ["hi"]
        empty = data(await c.call_tool("msg_recv", {"session": b["session"]}))
        assert empty["messages"] == [] and "caught up" in empty["empty_because"]
        bad = await c.call_tool("msg_recv", {"session": b["session"][:-1] + "z"})
        assert bad.is_error and b["session"] in bad.content[0].text


async def test_stdio_round_trip(db, repos, tmp_path):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agents_room", "mcp"], env={"AGENTS_ROOM_DB": str(db)}, cwd=str(repos["api"])
    )
    async with Client(params, read_timeout_seconds=30) as c:
        assert {t.name for t in (await c.list_tools()).tools} == TOOLS
        a = data(await c.call_tool("room_join", {"rooms": ["storefront"], "label": "api"}))
        assert a["repo"] == "repo:api" and "shared:storefront" in a["rooms"]
        b = data(await c.call_tool("room_join", {"rooms": ["payments"]}))
        # a second room_join from the same harness process is the same chat: no duplicate session row
        assert b["session"] == a["session"]
        who = data(await c.call_tool("room_who", {"session": a["session"]}))
        assert who["sessions"][0]["state"] == "live"
        lease = data(await c.call_tool("lease_acquire", {"session": a["session"], "paths": ["src/*.py"], "ttl_seconds": 60}))
        assert lease["granted"]
        (repos["api"] / "src" / "m.py").write_text("x")
        rd = data(await c.call_tool("file_read", {"session": a["session"], "path": "src/m.py"}))
        assert rd["hash"].startswith("sha256:")
        chk = data(await c.call_tool("file_check", {"session": a["session"]}))
        assert chk["diverged"] == 0
        hist = data(await c.call_tool("room_history", {"session": a["session"]}))
        assert hist["messages"] == []
        assert data(await c.call_tool("msg_unread", {"session": a["session"]}))["unread"] == 0
        assert data(await c.call_tool("msg_sent", {"session": a["session"]}))["messages"] == []
        assert data(await c.call_tool("lease_renew", {"session": a["session"]}))["renewed"]
        assert data(await c.call_tool("lease_release", {"session": a["session"]}))["released"] == ["src/*.py"]
        left = data(await c.call_tool("room_leave", {"session": a["session"], "rooms": ["storefront"]}))
        assert left["left"] == ["shared:storefront"]
    # the store the server wrote is the one in AGENTS_ROOM_DB, not the home one
    assert db.exists() and not (tmp_path / "home" / ".agents-room").exists()


async def test_every_tool_in_process_on_an_in_memory_store(repos):
    """Each tool through the MCP layer, on a ':memory:' store (no file at all)."""
    (repos["api"] / "src" / "f.py").write_text("x")
    async with Client(build_server(":memory:")) as c:
        me = data(await c.call_tool("room_join", {"rooms": ["mem"], "cwd": str(repos["api"]), "tags": ["t"]}))["session"]
        s = {"session": me}
        assert data(await c.call_tool("room_who", s))["sessions"][0]["session"] == me
        assert data(await c.call_tool("msg_send", {**s, "to": "*", "body": "solo"}))["recipients"] == 0
        assert data(await c.call_tool("room_history", {**s, "room": "mem"}))["messages"][0]["recipients"] == 0
        assert data(await c.call_tool("msg_unread", s))["unread"] == 0
        assert "nobody else" in data(await c.call_tool("msg_recv", s))["empty_because"]
        assert data(await c.call_tool("msg_sent", s))["messages"][0]["body"] == "solo"
        assert data(await c.call_tool("lease_acquire", {**s, "paths": ["src/"], "mode": "shared"}))["granted"][0]["pattern"] == "src/**"
        assert data(await c.call_tool("lease_renew", {**s, "ttl_seconds": 30}))["renewed"]
        assert data(await c.call_tool("file_read", {**s, "path": "src/f.py"}))["path"] == "src/f.py"
        assert data(await c.call_tool("file_check", {**s, "paths": ["src/f.py"]}))["files"][0]["status"] == "same"
        assert data(await c.call_tool("lease_release", s))["released"] == ["src/**"]
        assert data(await c.call_tool("room_leave", s))["ended"] is True
        bad = await c.call_tool("lease_acquire", {**s, "paths": ["a"], "mode": "weird"})
        assert bad.is_error and "exclusive" in bad.content[0].text


async def test_unexpected_failures_are_tool_errors_with_a_hint_not_tracebacks(db, repos, tmp_path, caplog):
    import logging
    import sqlite3

    caplog.set_level(logging.DEBUG)
    async with Client(build_server(db)) as c:
        # ValueError from the OS layer: a NUL in cwd
        bad = await c.call_tool("room_join", {"cwd": str(repos["api"]) + "\x00x"})
        assert bad.is_error
        text = bad.content[0].text
        assert "ValueError: " in text and "Hint:" in text and "NUL" in text
        me = data(await c.call_tool("room_join", {"cwd": str(repos["api"])}))["session"]
    # a store written by a newer agents-room: StoreError, on the first tool call of a new server
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    async with Client(build_server(db)) as c:
        bad = await c.call_tool("msg_recv", {"session": me})
        text = bad.content[0].text
        assert bad.is_error and "schema version 999, newer than this agents-room" in text and "agents-room doctor" in text
    # a store path sqlite cannot open (a directory): sqlite3.OperationalError
    as_dir = tmp_path / "dir.db"
    as_dir.mkdir()
    async with Client(build_server(as_dir)) as c:
        bad = await c.call_tool("msg_unread", {"session": me})
        text = bad.content[0].text
        assert bad.is_error and text.startswith("Error executing tool msg_unread: StoreError: ") and "is not a file" in text and str(as_dir) in text
    crashes = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert crashes == []


def test_the_fast_front_lists_what_the_sdk_server_lists():
    """`agents-room mcp` answers the handshake and tools/list from mcp_tools.json without importing
    the SDK (a harness waits for it before its first model request); that file must be the SDK
    server's own listing. After changing a tool: python -m agents_room.mcp_stdio --write"""
    from agents_room.mcp_stdio import TOOLS_FILE, listing_of

    assert json.loads(open(TOOLS_FILE).read()) == listing_of(build_server()), \
        "mcp_tools.json is stale: run python -m agents_room.mcp_stdio --write"


def test_the_fast_front_starts_without_the_sdk(db, tmp_path):
    """Handshake and listing with no `mcp` module importable at all: the SDK is not on that path."""
    import subprocess

    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "mcp.py").write_text("raise ImportError('the MCP SDK was imported before a tool call')\n")
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 2, "method": "nope/nope"}]
    p = subprocess.run([sys.executable, "-m", "agents_room", "mcp"], input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "AGENTS_ROOM_DB": str(db), "PYTHONPATH": str(blocker)})
    replies = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["id"] for r in replies] == [0, 1, 2], p.stderr
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert {t["name"] for t in replies[1]["result"]["tools"]} == TOOLS
    assert replies[2]["error"]["code"] == -32601


def test_the_fast_fronts_json_reads_and_writes_as_json_does():
    """The front reads and writes JSON with json's C half, without importing the json package:
    the same text and values as json, and json's own errors."""
    from agents_room.mcp_stdio import json_dumps, json_loads

    values = [{"jsonrpc": "2.0", "id": 7, "result": {"text": "é “q” \n\t\\ \u2028 \U0001f600", "list": []}},
              {"a": [1, -2.5, 1e300, 10 ** 30, True, False, None, "", {}, []], "ü": {"nested": [[[]]]}},
              {"x": float("nan"), "y": float("inf")}, "plain", 3, {1: "int key", None: 0}]
    for value in values:
        text = json.dumps(value, ensure_ascii=False)
        assert json_dumps(value) == text
        assert json_dumps(json_loads(text)) == json_dumps(json_loads(text.encode("utf-8"))) == text
    assert json_loads(b'\xef\xbb\xbf{"bom": 1}') == {"bom": 1}
    for bad in ("{nope", '{"a": 1} x', "", b"\xff{}", "[1,]"):
        with pytest.raises(ValueError) as theirs:
            json.loads(bad)
        with pytest.raises(ValueError) as ours:
            json_loads(bad)
        assert str(ours.value) == str(theirs.value)
    for unencodable in ({"a": object()}, {(1, 2): 3}):
        with pytest.raises(TypeError):
            json_dumps(unencodable)
