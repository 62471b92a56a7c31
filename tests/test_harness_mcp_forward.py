"""`predictorx mcp`'s front forwarding agents-room's tools (workflowmcp/room_forward.py, issue 30):
the child is started on the first forwarded call, a child that died or stays silent gives a tool
error with a sentence and the next call starts another, the task token never reaches it, and it
ends with the front's input. The daemon's assembly and a real agents-room: tests/rooms/test_one_mcp_front.py."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from predictorx.workflowmcp import room_forward
from predictorx.workflowmcp.mcp_stdio import TOOLS_FILE, Front, serve, with_forwarded

#: a stand-in agents-room front: answers the handshake; `echo_env` returns the environment it got,
#: `hang` never answers, `die` exits before answering
FAKE = r'''
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {}, "serverInfo": {"name": "fake"}}
    else:
        name = msg["params"]["name"]
        if name == "hang":
            continue
        if name == "die":
            sys.exit(3)
        if name == "fail":
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "bad session"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}), flush=True)
        result = {"content": [{"type": "text", "text": json.dumps({"pid": os.getpid(), "env": dict(os.environ),
                                                                   "args": msg["params"]["arguments"]})}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
'''


def _front(tmp_path: Path, **timeouts: float) -> Front:
    fake = tmp_path / "fake_front.py"
    fake.write_text(FAKE)
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"name": "agents-room", "instructions": "room rules",
                                 "tools": [{"name": n, "inputSchema": {"type": "object"}}
                                           for n in ("echo_env", "hang", "die", "fail", "harness_state")]}))
    spec = tmp_path / "forward.json"
    spec.write_text(json.dumps({"command": sys.executable, "args": [str(fake)], "env": {"AGENTS_ROOM_HARNESS": "claude"},
                                "tools_file": str(tools)}))
    listing, forward, forwarded = with_forwarded(json.loads(Path(TOOLS_FILE).read_text()), str(spec))
    front = Front(listing, lambda: None, forward, forwarded)
    if timeouts:
        front._forwarder = room_forward.Forwarder(forward, **timeouts)
    return front


def _call(front: Front, name: str, mid: int = 5) -> dict[str, Any]:
    reply = front.handle({"jsonrpc": "2.0", "id": mid, "method": "tools/call", "params": {"name": name, "arguments": {"x": 1}}})
    assert reply is not None and reply["id"] == mid
    return reply


def _echo(front: Front) -> dict[str, Any]:
    result = _call(front, "echo_env")["result"]
    assert not result.get("isError"), result
    return json.loads(result["content"][0]["text"])


def test_the_listing_has_both_tool_sets_and_our_names_win(tmp_path):
    front = _front(tmp_path)
    names = [t["name"] for t in front.listing["tools"]]
    assert names.count("harness_state") == 1 and {"echo_env", "workflow_complete"} <= set(names)
    assert "harness_state" not in front.forwarded and "echo_env" in front.forwarded
    assert front.listing["instructions"].endswith("\n\nroom rules")


def test_a_forwarded_call_reaches_the_child_without_predictorxs_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("PREDICTORX_TOKEN", "task-token-secret")
    monkeypatch.setenv("AGENTS_ROOM_SESSION", "s-12345678")
    front = _front(tmp_path)
    front.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}})
    assert front._forwarder is None  # nothing started before a forwarded call
    got = _echo(front)
    assert got["args"] == {"x": 1} and got["env"]["AGENTS_ROOM_SESSION"] == "s-12345678"
    assert got["env"]["AGENTS_ROOM_HARNESS"] == "claude" and not [k for k in got["env"] if k.startswith("PREDICTORX_")]
    assert _echo(front)["pid"] == got["pid"]  # one child for the session
    assert front._forwarder._proc is not None and front.protocol == "2025-03-26"
    # the child's JSON-RPC error is the client's, under the client's id
    assert _call(front, "fail", 9)["error"] == {"code": -32602, "message": "bad session"}
    front.close()


def test_a_child_that_died_gives_an_error_and_the_next_call_starts_another(tmp_path):
    front = _front(tmp_path)
    first = _echo(front)["pid"]
    front._forwarder._proc.kill()  # killed mid-run
    front._forwarder._proc.wait()
    failed = _call(front, "echo_env")["result"]
    assert failed["isError"] and "did not answer echo_env" in failed["content"][0]["text"]
    assert "next call starts it again" in failed["content"][0]["text"]
    assert _echo(front)["pid"] != first
    died = _call(front, "die")["result"]
    assert died["isError"] and "exited" in died["content"][0]["text"]
    assert _echo(front)["pid"]
    front.close()


def test_a_silent_child_is_ended_after_its_time(tmp_path):
    front = _front(tmp_path, call_timeout_s=0.5)
    proc_pid = _echo(front)["pid"]
    hung = _call(front, "hang")["result"]
    assert hung["isError"] and "no answer in time" in hung["content"][0]["text"]
    assert front._forwarder._proc is None and not os.path.exists(f"/proc/{proc_pid}")  # ended and reaped
    assert _echo(front)["pid"] != proc_pid
    front.close()


def test_the_child_ends_with_the_fronts_input(tmp_path):
    """End of the front's input: end of input for the child, which exits (killed if it lingers)."""
    front = _front(tmp_path, close_timeout_s=0.5)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo_env", "arguments": {}}}
    stdout = io.BytesIO()
    serve(front, io.BytesIO(json.dumps(call).encode() + b"\n"), stdout)
    child = front._forwarder._proc
    assert child.poll() is None  # serving: the child waits for more
    front.close()
    assert child.poll() is not None and front._forwarder._proc is None
    assert json.loads(stdout.getvalue())["id"] == 1
