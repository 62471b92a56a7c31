"""The stdio front answers a tool call itself (direct_call.py, issue 30): the same answers, and the
same room afterwards, as the SDK server's, without importing the SDK (~0.5 s of CPU at a session's
first call); arguments that do not plainly fit go to the SDK."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agents_room import mcp_stdio, sessions
from agents_room.direct_call import arguments_for
from agents_room.room import Room
from agents_room.store import connect

#: (tool, arguments, answered by the front itself); "$A", "$B": the sessions the joins returned,
#: "$M": the id of the last message sent
SCENARIO: list[tuple[str, dict[str, Any], bool]] = [
    ("room_join", {"rooms": ["storefront"], "cwd": "$api", "label": "api agent", "autonomy": 2}, True),
    ("room_join", {"rooms": ["shared:storefront"], "cwd": "$web", "tags": ["ui"], "harness": "codex"}, True),
    ("room_join", {"session": "$A", "rooms": ["x"]}, True),
    ("room_who", {"session": "$A"}, True),
    ("msg_send", {"session": "$A", "to": "*", "body": "hello é", "subject": "hi", "ttl_seconds": 600,
                  "ack_required": True}, True),
    ("msg_unread", {"session": "$B"}, True),
    ("msg_recv", {"session": "$B", "limit": 10}, True),
    ("msg_ack", {"session": "$B", "message_ids": ["$M"]}, True),
    ("msg_send", {"session": "$B", "body": "reply", "reply_to": "$M", "importance": "urgent"}, True),
    ("msg_thread", {"session": "$A", "message_id": "$M"}, True),
    ("msg_sent", {"session": "$A"}, True),
    ("msg_search", {"session": "$A", "query": "hello"}, True),
    ("room_history", {"session": "$A", "room": "shared:storefront"}, True),
    ("lease_acquire", {"session": "$A", "paths": ["src/**"], "ttl_seconds": 60.5}, True),
    ("lease_acquire", {"session": "$B", "paths": ["src/**"]}, True),  # (another repo: no conflict)
    ("lease_acquire", {"session": "$A", "paths": ["src/**"], "mode": "shared"}, True),
    ("room_join", {"session": "$B", "cwd": "$api"}, True),
    ("lease_acquire", {"session": "$B", "paths": ["src/a.py"]}, True),  # CONFLICT: the tool's own refusal
    ("lease_renew", {"session": "$A", "ttl_seconds": 120}, True),
    ("file_read", {"session": "$A", "path": "README.md"}, True),
    ("file_check", {"session": "$A"}, True),
    ("lease_release", {"session": "$A"}, True),
    ("msg_recv", {"session": "s-00000000"}, True),  # the room's refusal: its sentence
    ("msg_send", {"session": "$A", "to": "nobody-here", "body": "x"}, True),
    ("room_leave", {"session": "$B", "rooms": ["storefront"]}, True),
    # not plainly of the schema: the SDK answers (its coercion or its validation error)
    ("msg_recv", {"session": "$A", "limit": "5"}, False),
    ("msg_send", {"session": "$A", "body": "x", "ttl_seconds": True}, False),
    ("msg_sent", {"session": "$A", "limit": 5.0}, False),
    ("room_who", {}, False),
    ("room_who", {"session": "$A", "extra": 1}, False),
    ("no_such_tool", {}, False),
    ("msg_send", {"session": "$A", "to": "null", "body": "x"}, False),  # (the SDK reads it as JSON: None)
    ("room_join", {"session": "$A", "label": "{}"}, False),
    ("msg_send", {"session": "$A", "to": "*", "body": "x", "subject": "42"}, True),  # (a number stays text)
    ("room_leave", {"session": "$A"}, True),
]


def _fronts(db: Path) -> tuple[mcp_stdio.Front, mcp_stdio.Front]:
    listing = json.loads(Path(mcp_stdio.TOOLS_FILE).read_text())

    def build() -> Any:
        from agents_room.mcp_server import build_server

        return build_server(db)

    def direct() -> Any:
        from agents_room import direct_call, tool_calls

        return tool_calls.Tools(db, direct_call.ToolFailed)

    return mcp_stdio.Front(listing, build), mcp_stdio.Front(listing, build, direct)


def _replay(front: mcp_stdio.Front, repos: dict[str, Path], fit_only: bool) -> list[Any]:
    names: dict[str, Any] = {"$api": str(repos["api"]), "$web": str(repos["web"])}
    answers = []
    for i, (tool, arguments, here) in enumerate(SCENARIO):
        if fit_only and not here:
            continue
        given = json.loads(json.dumps(arguments), object_hook=lambda d: {
            k: ([names.get(x, x) for x in v] if isinstance(v, list) else names.get(v, v) if isinstance(v, str) else v)
            for k, v in d.items()})
        answer = front.handle({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                               "params": {"name": tool, "arguments": given}})
        answers.append(answer)
        if fit_only:
            assert front._app is None, (tool, given)
        data = (answer.get("result") or {}).get("structuredContent") or {}
        if tool == "room_join" and "session" in data:
            names.setdefault("$A" if "$A" not in names else "$B", data["session"])
        if tool == "msg_send" and "message_id" in data:
            names["$M"] = data["message_id"]
    return answers


@pytest.fixture
def replayable(db, monkeypatch, repos):
    """A fresh store, the same clock and the same session ids for every replay."""
    (repos["api"] / "README.md").write_text("read me\n")

    def fresh() -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        ticks = iter(range(1_800_000_000, 1_800_001_000))
        monkeypatch.setattr(Room, "open", classmethod(lambda cls, path=None, clock=None: cls(connect(path),
                                                                                           lambda: float(next(ticks)))))
        count = iter(range(1, 1000))

        class _Os:  # the sessions module's os, with session ids counted rather than drawn
            def __getattr__(self, name: str) -> Any:
                return getattr(os, name)

            @staticmethod
            def urandom(n: int) -> bytes:
                return next(count).to_bytes(n, "big")

        monkeypatch.setattr(sessions, "os", _Os())
    return fresh


def test_the_fronts_answers_are_the_sdk_servers(db, repos, replayable):
    replayable()
    sdk, _ = _fronts(db)
    expected = _replay(sdk, repos, fit_only=False)
    replayable()
    _, front = _fronts(db)
    answers = _replay(front, repos, fit_only=False)
    assert len(answers) == len(expected)
    for step, got, want in zip(SCENARIO, answers, expected):
        assert got == want, step
    assert expected[3]["result"]["structuredContent"]["sessions"], "the scenario reached the room"


def test_a_session_of_fitting_calls_never_builds_the_sdk_server(db, repos, replayable):
    replayable()
    _, front = _fronts(db)
    answers = _replay(front, repos, fit_only=True)
    assert front._app is None
    assert answers[-1]["result"]["isError"] is False
    assert any(a["result"]["content"][0]["text"].startswith("Error executing tool lease_acquire: CONFLICT")
               for a in answers if a["result"]["isError"])


def test_only_plain_arguments_are_taken_here():
    tools = {t["name"]: t["inputSchema"] for t in json.loads(Path(mcp_stdio.TOOLS_FILE).read_text())["tools"]}
    assert arguments_for(tools["msg_recv"], {"session": "s-1"}) == {"session": "s-1", "limit": 50}
    renew = arguments_for(tools["lease_renew"], {"session": "s", "ttl_seconds": 5})
    assert renew == {"session": "s", "paths": None, "ttl_seconds": 5.0} and type(renew["ttl_seconds"]) is float
    assert arguments_for(tools["room_join"], {"autonomy": "wake"})["autonomy"] == "wake"
    for name, arguments in [("msg_recv", {"session": "s", "limit": True}), ("msg_recv", {"limit": 1}),
                            ("lease_renew", {"session": "s", "ttl_seconds": 2 ** 60}),
                            ("msg_ack", {"session": "s", "message_ids": [1, "2"]}),
                            ("room_join", {"autonomy": 1.0}), ("msg_unread", {"session": "s", "x": 1})]:
        assert arguments_for(tools[name], arguments) is None, (name, arguments)


def test_an_answer_is_written_as_the_sdk_writes_it():
    """JSON through the json module where it writes what pydantic_core writes, else pydantic_core."""
    import pydantic_core

    from agents_room.direct_call import call

    tool = {"name": "t", "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object", "additionalProperties": True, "title": "tDictOutput"}}
    for value in [{"a": "é\u2028\x01\"\\", "n": [1, None, True, 0.25, 1e16]}, {"small": 1e-05}, {"inf": float("inf")},
                  {"t": (1, 2)}, {"k": {1: "int key"}}]:
        got = call(tool, lambda tools, value=value: value, None, {})
        assert got["content"][0]["text"] == pydantic_core.to_json(value, fallback=str, indent=2).decode()
        assert got["structuredContent"] == pydantic_core.to_jsonable_python(value)


def test_an_answer_the_sdk_cannot_write_is_its_error():
    """A lone surrogate, or nesting past pydantic_core's limit: the SDK answers "Error executing tool"."""
    import pydantic_core

    from agents_room.direct_call import call

    tool = {"name": "t", "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object", "additionalProperties": True, "title": "tDictOutput"}}
    for depth in range(250, 258):
        value: Any = 1
        for _ in range(depth):
            value = {"k": value}
        try:
            text = pydantic_core.to_json(value, fallback=str, indent=2).decode()
            expected: Any = {"content": [{"type": "text", "text": text}], "structuredContent": value, "isError": False}
        except ValueError:
            expected = {"content": [{"type": "text", "text": "Error executing tool t"}], "isError": True}
        assert call(tool, lambda tools, value=value: value, None, {}) == expected, depth
    assert call(tool, lambda tools: {"x": "\ud800"}, None, {})["isError"] is True


def test_the_started_front_calls_a_tool_without_the_sdk(db, tmp_path):
    """As a run starts it (`python -S …/mcp_stdio.py --serve`), with the SDK unimportable."""
    from agents_room.harness_config import mcp_entry

    entry = mcp_entry("claude", db, fast=True)
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "mcp.py").write_text("raise ImportError('the MCP SDK was imported for a tool call')\n")
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
             {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "room_join", "arguments": {"rooms": ["storefront"], "label": "t"}}}]
    p = subprocess.run([entry["command"], *entry["args"]], input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=60, cwd=tmp_path,
                       env={**os.environ, **entry["env"], "PYTHONPATH": str(blocker)})
    replies = {r["id"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert replies[1]["result"]["isError"] is False, (replies, p.stderr)
    assert replies[1]["result"]["structuredContent"]["rooms"] == ["shared:storefront"]
    room = Room.open(db)
    try:
        joined = replies[1]["result"]["structuredContent"]["session"]
        assert [(x["session"], x["label"]) for x in room.who()["sessions"]] == [(joined, "t")]
    finally:
        room.close()


def test_a_reply_that_cannot_be_written_is_an_error_and_the_session_goes_on():
    replies: list[Any] = []

    class _Out:
        def write(self, data: bytes) -> None:
            replies.append(json.loads(data))

        def flush(self) -> None:
            pass

    class _Front:
        def handle(self, msg: Any) -> Any:
            return {"jsonrpc": "2.0", "id": msg["id"], "result": {"text": "\ud800" if msg["id"] == 1 else "ok"}}

    mcp_stdio.serve(_Front(), [b'{"id": 1, "method": "x"}\n', b'{"id": 2, "method": "x"}\n'], _Out())  # type: ignore[arg-type]
    assert [r["id"] for r in replies] == [1, 2] and "error" in replies[0] and replies[1]["result"] == {"text": "ok"}
