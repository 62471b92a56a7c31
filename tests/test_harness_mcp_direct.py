"""The stdio front answers a harness tool call itself (workflowmcp/direct_call.py, issue 30): the
same requests to the server and the same answer to the agent as the SDK server's, without importing
the SDK (~0.6 s of CPU at a run's first call); arguments that do not plainly fit go to the SDK."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from predictorx.daemon.workflowhooks import mcp_setup
from predictorx.workflowmcp import mcp_stdio
from predictorx.workflowmcp.direct_call import content_of, fits

from tests.test_http1_read import answering

#: path → (status, JSON body or None); anything else is a 404 with a detail
ANSWERS: dict[str, tuple[int, Any]] = {
    "/api/tasks/t-1/harness/sweep": (200, {"state": "idle", "beans": [], "cost": 1e-7, "name": "é\u2028x"}),
    "/api/issues/7/workflows": (200, [{"process_id": "p", "status": "running", "version": 2, "enabled": ["a"]},
                                      {"process_id": "q", "status": "done", "version": 1, "enabled": []}]),
    "/api/issues/7/classifications": (200, [{"id": "c1", "question": "?", "candidates": ["a"], "category": "x",
                                             "reason": "r", "method": "pending"},
                                            {"id": "c2", "category": "y", "reason": "r", "method": "table"}]),
    "/api/issues/7/beans": (200, []),
    "/api/classify": (200, {"category": "bug", "rule": 3}),
    "/api/issues/7/workflow-state/suspend": (409, {"detail": "no workflow is active on issue #7"}),
    "/api/issues/7/workflow-state/resume": (204, None),
}


class _Server(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, Any, str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.seen.append((self.command, self.path, body, self.headers.get("Authorization", "")))
        status, out = ANSWERS.get(self.path.split("?")[0], (200, {"ok": True, "path": self.path}))
        data = b"" if out is None else json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer


@pytest.fixture
def server(monkeypatch) -> Iterator[list[tuple[str, str, Any, str]]]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    seen: list[tuple[str, str, Any, str]] = []
    _Server.seen = seen
    for key, value in {"PREDICTORX_SERVER_URL": f"http://127.0.0.1:{httpd.server_address[1]}",
                       "PREDICTORX_TOKEN": "pxt_test", "PREDICTORX_ISSUE": "7", "PREDICTORX_TASK_ID": "t-1"}.items():
        monkeypatch.setenv(key, value)
    try:
        yield seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def _fronts() -> tuple[mcp_stdio.Front, mcp_stdio.Front]:
    """(the SDK's answers only, the front as run() makes it)."""
    listing = json.loads(Path(mcp_stdio.TOOLS_FILE).read_text())

    def build() -> Any:
        from predictorx.workflowmcp.mcp_server import build_server

        return build_server()

    return mcp_stdio.Front(listing, build), mcp_stdio.Front(listing, build, direct=mcp_stdio.direct_tools)


#: (tool, arguments, answered here rather than by the SDK)
CALLS: list[tuple[str, dict[str, Any], bool]] = [
    ("harness_state", {}, True),
    ("workflow_enabled", {}, True),
    ("workflow_enabled", {"process": "p"}, True),
    ("workflow_start", {"process": "p/1"}, True),
    ("workflow_complete", {"process": "p", "step": "s", "produced": {"bean": "b1"}, "facts": {"n": 2, "ok": True},
                           "note": "done"}, True),
    ("workflow_pass_gate", {"process": "p", "gate": "g", "outcome": "yes", "reason": "because"}, True),
    ("workflow_suspend", {}, True),  # the server refuses (409): its sentence
    ("workflow_resume", {}, True),  # an empty answer (204)
    ("classify", {"text": "the build fails"}, True),
    ("classification_pending", {}, True),
    ("classification_judge", {"category": "bug", "reason": "r", "folio": None, "classification": "c1"}, True),
    ("bean_list", {}, True),  # an empty list: no content
    ("bean_create", {"title": "t"}, True),
    ("bean_update", {"bean": "b 1", "op": "note", "text": "x", "etag": 3}, True),
    ("bean_update", {"bean": "b1", "op": "drop"}, True),  # the tool's own refusal, before any request
    ("handoff_write", {"done": "d", "next_step": "n", "open_questions": ["q1", "q2"]}, True),
    ("no_such_tool", {}, False),
    # not plainly of the schema: the SDK answers (its coercion or its validation error)
    ("bean_update", {"bean": "b1", "op": "claim", "etag": "3"}, False),
    ("bean_update", {"bean": "b1", "op": "claim", "etag": True}, False),
    ("workflow_start", {}, False),
    ("workflow_start", {"process": "p", "extra": 1}, False),
    ("workflow_complete", {"process": "p", "step": "s", "produced": {"bean": 1}}, False),
    ("workflow_complete", {"process": "p", "step": "s", "facts": "{\"n\": 1}"}, False),
    ("bean_update", {"bean": "b1", "op": "note", "text": "null"}, False),  # (the SDK reads it as JSON: None)
    ("classification_judge", {"category": "c", "reason": "r", "folio": "{}"}, False),
    ("classification_judge", {"category": "c", "reason": "r", "folio": "[1]"}, False),
    ("bean_update", {"bean": "b1", "op": "note", "text": "12"}, True),  # (a number stays text)
]


@pytest.mark.parametrize(("name", "arguments", "here"), CALLS)
def test_a_call_answered_here_is_the_sdk_servers_answer(server, name, arguments, here):
    sdk, front = _fronts()
    message = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    expected = sdk.handle(message)
    by_sdk = list(server)
    server.clear()
    answered = front.handle(message)
    assert answered == expected
    assert (front._app is None) is here  # (the SDK server is built only for a call it answers)
    assert server == by_sdk  # the same requests (method, path with its query, body, token)
    assert all(auth == "Bearer pxt_test" for *_, auth in server)


def test_only_plain_arguments_are_taken_here():
    schema = json.loads(Path(mcp_stdio.TOOLS_FILE).read_text())
    tools = {t["name"]: t["inputSchema"] for t in schema["tools"]}
    assert fits(tools["bean_update"], {"bean": "b", "op": "note", "text": None, "etag": 2})
    assert fits(tools["handoff_write"], {"done": "d", "next_step": "n", "open_questions": ["a"]})
    assert fits(tools["workflow_complete"], {"process": "p", "step": "s", "facts": {"a": [1, {"b": None}]}})
    for name, arguments in [("bean_update", {"bean": "b", "op": "note", "etag": 2.0}),
                            ("bean_update", {"bean": "b", "op": "note", "etag": False}),
                            ("bean_update", {"bean": "b"}),
                            ("bean_create", {"title": "t", "body": None}),
                            ("handoff_write", {"done": "d", "next_step": "n", "open_questions": "a"}),
                            ("workflow_complete", {"process": "p", "step": "s", "produced": {"b": None}}),
                            ("harness_state", {"x": 1})]:
        assert not fits(tools[name], arguments), (name, arguments)


def test_content_is_the_sdks_for_every_kind_of_value():
    from mcp.server.mcpserver.utilities.func_metadata import _convert_to_content

    for value in [None, "text", {"a": 1.5, "b": [1, None], "c": "é\u2028"}, [], [{"x": 1}, "y", [2, 3]], 1e-7, True,
                  {"s": "q\"\\\n\r\t\b\f\x01\x1f\x7f\u2029😀</>", "n": [10 ** 30, -0, 0.1 + 0.2, 1e16, 1e15, 1e-4]},
                  {"small": 1e-05, "inf": float("inf")}, {"t": (1, 2)}, {1: "int key"}, [{"deep": [[{"x": 2.5e-3}]]}]]:
        assert content_of(value) == [c.model_dump(mode="json", exclude_none=True) for c in _convert_to_content(value)]


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if depth % 2 else {"k": value}
    return value


def test_an_answer_the_sdk_cannot_write_is_its_error(monkeypatch):
    """A lone surrogate, or nesting past pydantic_core's limit: the SDK answers "Error executing
    tool"; so does the front, and the session goes on."""
    from mcp.server.mcpserver.utilities.func_metadata import _convert_to_content

    from predictorx.workflowmcp.direct_call import call

    tool = {"name": "t", "inputSchema": {"type": "object", "properties": {}}}
    for value in [{"x": "\ud800"}, {"\udfff": 1}, *(_nested(d) for d in range(250, 258))]:
        try:
            expected: Any = {"content": [c.model_dump(mode="json", exclude_none=True) for c in _convert_to_content(value)],
                             "isError": False}
        except Exception:  # noqa: BLE001 — what the SDK path answers for it
            expected = {"content": [{"type": "text", "text": "Error executing tool t"}], "isError": True}
        assert call(tool, lambda value=value: value, {}) == expected
    replies = []

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


def test_the_daemons_front_calls_a_tool_without_the_sdk(server, tmp_path):
    """As a run starts it (`python -S mcp_stdio_start.py --env-file F`), with the SDK unimportable."""
    env = {k: os.environ[k] for k in ("PREDICTORX_SERVER_URL", "PREDICTORX_TOKEN", "PREDICTORX_ISSUE",
                                      "PREDICTORX_TASK_ID")}
    mcp_setup("claude", tmp_path, env)
    entry = json.loads((tmp_path / "predictorx.mcp.json").read_text())["mcpServers"]["predictorx"]
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "mcp.py").write_text("raise ImportError('the MCP SDK was imported for a tool call')\n")
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
             {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "handoff_write", "arguments": {"done": "d", "next_step": "n"}}}]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PREDICTORX_")}
    p = subprocess.run([entry["command"], *entry["args"]], input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=60, env={**clean, "PYTHONPATH": str(blocker)})
    replies = {r["id"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert replies[1]["result"]["isError"] is False, (replies, p.stderr)
    assert json.loads(replies[1]["result"]["content"][0]["text"]) == {"ok": True, "path": "/api/tasks/t-1/harness/handoff"}
    assert server == [("POST", "/api/tasks/t-1/harness/handoff", {"done": "d", "next_step": "n", "open_questions": []},
                       "Bearer pxt_test")]


def _both_apis() -> tuple[Any, Any]:
    """(an Api calling over a socket, one calling through httpx) for the fixture's server."""
    from predictorx.workflowmcp import direct_call, harness_tools

    plain, through_httpx = harness_tools.Api(direct_call.ToolFailed), harness_tools.Api(direct_call.ToolFailed)
    through_httpx.plain = False
    assert plain.plain
    return plain, through_httpx


@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", "/api/tasks/t-1/harness/sweep", None), ("POST", "/api/classify", {"text": "é \u2028 \"q\""}),
    ("POST", "/api/issues/7/workflow-state/suspend", {}), ("POST", "/api/issues/7/workflow-state/resume", {}),
    ("GET", "/api/nothing%20here?x=1", None), ("POST", "/api/issues/7/beans/b%201/note", {"text": None, "if_version": 3}),
])
def test_a_call_over_a_socket_is_the_call_httpx_makes(server, method, path, body):
    plain, through_httpx = _both_apis()

    def outcome(api: Any) -> Any:
        try:
            return "answer", api.call(method, path, body)
        except Exception as e:  # noqa: BLE001 — what the tool would raise, compared
            return type(e).__name__, str(e)

    expected = outcome(through_httpx)
    by_httpx = list(server)
    server.clear()
    assert outcome(plain) == expected
    assert server == by_httpx


def test_a_server_not_reached_is_named_as_httpx_names_it(server, monkeypatch):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("PREDICTORX_SERVER_URL", f"http://127.0.0.1:{port}")
    for api in _both_apis():
        with pytest.raises(Exception, match=r"did not answer \(ConnectError\)"):
            api.call("GET", "/api/health")


def test_a_server_that_keeps_the_connection_answers_at_once():
    """A kept-alive answer (Content-Length, connection left open) is read without waiting for a close
    (the reading itself: tests/test_http1_read.py)."""
    import time

    from predictorx.workflowmcp.plain_call import request

    url, close = answering(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"ok\": true}")
    started = time.monotonic()
    try:
        assert request(url, "GET", "/x", {}, None) == (200, b'{"ok": true}')
        assert time.monotonic() - started < 10  # (not the 30 s read timeout)
    finally:
        close()


def test_an_answer_that_is_not_http_is_httpxs_remote_protocol_error():
    from predictorx.workflowmcp.plain_call import CallFailed, request

    for pieces in [(b"HTTP/1.1 200 OK\r\n", b"X: " + b"x" * 70_000), (b"SSH-2.0-OpenSSH\r\n\r\n",)]:
        url, close = answering(*pieces)
        try:
            with pytest.raises(CallFailed, match="^RemoteProtocolError$"):
                request(url, "GET", "/x", {}, None)
        finally:
            close()


@pytest.mark.parametrize(("env", "url", "direct"), [
    ({}, "http://127.0.0.1:8000", True),
    ({"HTTP_PROXY": "http://proxy:3128", "proxied_by_httpx": "1"}, "http://127.0.0.1:8000", False),
    ({"HTTP_PROXY": "http://proxy:3128", "NO_PROXY": "localhost, 127.0.0.1"}, "http://127.0.0.1:8000", True),
    ({"all_proxy": "socks5://p:1", "no_proxy": "*"}, "http://px.internal", True),
    ({"ALL_PROXY": "http://p:1", "NO_PROXY": ".internal"}, "http://px.internal", False),  # (httpx's suffix rules)
    ({"HTTPS_PROXY": "http://proxy:3128"}, "http://127.0.0.1:8000", True),  # (https only)
    ({}, "https://px.example.com", False),
    ({}, "http://user:pw@127.0.0.1:8000", False),
    ({}, "http://127.0.0.1:8000/a b", False),  # (httpx would percent-encode it)
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "127.0.0.1", "no_proxy": "example.com", "proxied_by_httpx": "1"},
     "http://127.0.0.1:8000", False),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "127.0.0.1", "no_proxy": "", "proxied_by_httpx": "1"},
     "http://127.0.0.1:8000", False),
    ({"Http_Proxy": "http://p:1", "proxied_by_httpx": "1"}, "http://127.0.0.1:8000", False),
    ({"Http_Proxy": "http://p:1", "http_proxy": ""}, "http://127.0.0.1:8000", True),
    ({"HTTP_PROXY": "http://p:1", "REQUEST_METHOD": "GET"}, "http://127.0.0.1:8000", True),  # (CGI: urllib drops it)
])
def test_a_socket_only_where_httpx_would_go_direct(monkeypatch, env, url, direct):
    import httpx2 as httpx

    from predictorx.workflowmcp.plain_call import direct_to

    for var in [v for v in os.environ if v.lower().endswith("_proxy")] + ["REQUEST_METHOD"]:
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        if var != "proxied_by_httpx":
            monkeypatch.setenv(var, value)
    assert direct_to(url) is direct
    client = httpx.Client()
    if direct:  # httpx agrees: no proxy for it
        assert client._transport_for_url(httpx.URL(url)) is client._transport
    elif env.get("proxied_by_httpx"):  # (the environment's reading that must agree with urllib's)
        assert client._transport_for_url(httpx.URL(url)) is not client._transport
    assert not direct_to("http://127.0.0.1:8000", token="pxt_a\r\nX-Evil: 1")
