"""``agents-room mcp``: the stdio transport in front of the SDK server (mcp_server.py), fast to start.

A harness waits for its MCP servers before its first model request (Claude Code in ``-p`` mode
does), and importing the MCP SDK costs about a second of CPU. So the handshake (``initialize``,
``ping``) and ``tools/list`` are answered here with the standard library, from mcp_tools.json —
the SDK server's own listing, written by ``python -m agents_room.mcp_stdio --write`` and checked
against the live SDK by tests/test_mcp.py. A tool call is answered here too, by the tool's one call
on the room (tool_calls.py, direct_call.py: ~0.5 s of CPU less at a session's first call, issue 30),
when its arguments plainly fit the listed schema; any other call goes to the SDK, imported then,
which runs it exactly as the SDK server does (``MCPServer.call_tool``).

Newline-delimited JSON-RPC 2.0 over stdin/stdout, the MCP stdio transport, one request at a time.
Before its first answer it imports only os, sys and json's C half (``_json``: not the json package,
whose ``re`` import was half of the front's start).
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and not __package__:  # started as a file: its package's root, not its folder, on the path
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TYPE_CHECKING = False  # (typing, like pathlib, costs start-up time this front exists to save)
if TYPE_CHECKING:
    from typing import Any, Callable

TOOLS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_tools.json")
#: Revisions reached through the `initialize` handshake; a client offering another gets the newest.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR, PARSE_ERROR = -32601, -32602, -32603, -32700
#: Lists the SDK server answers, empty here as there.
_EMPTY = {"resources/list": "resources", "resources/templates/list": "resourceTemplates", "prompts/list": "prompts"}


# -- json.loads / json.dumps(…, ensure_ascii=False) without the json package ----------------------
# The json package imports `re`, and `re` imports `enum`, `functools` and `collections`: about 7 ms
# of CPU, half of this front's start, paid by every run before its harness's first model request
# (issue 30). The work is done by the C scanner and encoder json itself uses (`_json`), with the
# settings of json's defaults, so a value reads and writes exactly as with json; anything else (no
# C accelerator, bytes that are not UTF-8, a byte order mark, a document that does not decode, a
# value that does not encode) goes to json itself, so its answers and errors are json's own.


def _json_c() -> Any:
    try:
        import _json
    except ImportError:  # not CPython: json does it all
        return None
    return _json


_C = _json_c()
_WS = " \t\n\r"  # json.decoder.WHITESPACE


class _JsonDefaults:
    """What the scanner reads from `json.JSONDecoder()` (json's default decoder)."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan = _C.make_scanner(_JsonDefaults()) if _C is not None else None


def json_loads(s: str | bytes) -> Any:
    """`json.loads(s)`."""
    try:
        text = s.decode("utf-8") if isinstance(s, bytes) else s
    except UnicodeDecodeError:
        text = None
    if _scan is None or not isinstance(text, str) or text.startswith("\ufeff"):
        return _json().loads(s)
    try:
        obj, end = _scan(text, len(text) - len(text.lstrip(_WS)))
    except Exception:  # noqa: BLE001 — not a document: json says why, in its own words
        return _json().loads(s)
    return obj if not text[end:].lstrip(_WS) else _json().loads(s)  # (extra data: json's error)


def _unencodable(o: Any) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def json_dumps(obj: Any) -> str:
    """`json.dumps(obj, ensure_ascii=False)`."""
    if _C is not None:
        try:  # (markers, default, encoder, indent, separators, sort_keys, skipkeys, allow_nan): json's
            encode = _C.make_encoder({}, _unencodable, _C.encode_basestring, None, ": ", ", ", False, False, True)
            return "".join(encode(obj, 0))
        except (TypeError, ValueError):  # json says what does not encode, in its own words
            pass
    return _json().dumps(obj, ensure_ascii=False)


def _json() -> Any:
    import json

    return json


class Front:
    """One stdio session: `listing` is {"name", "instructions", "tools"}; `build` makes the SDK server."""

    def __init__(self, listing: dict[str, Any], build: Callable[[], Any], direct: Callable[[], Any] | None = None) -> None:
        self.listing = listing
        self.build = build
        #: makes the tool_calls.Tools for calls answered here without the SDK (direct_call.py), or None
        self.direct = direct
        self._tools: Any = None
        self._app: Any = None
        self._loop: Any = None

    def handle(self, msg: Any) -> dict[str, Any] | None:
        if not isinstance(msg, dict) or "method" not in msg:
            return None  # a response to us (we send no requests) or junk without an id
        if "id" not in msg:
            return None  # a notification (initialized, cancelled, …)
        mid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        try:
            if method == "initialize":
                offered = params.get("protocolVersion")
                result: Any = {
                    "protocolVersion": offered if offered in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
                    "capabilities": {"prompts": {"listChanged": False},
                                     "resources": {"listChanged": False, "subscribe": False},
                                     "tools": {"listChanged": False}},
                    "serverInfo": {"name": self.listing["name"], "version": ""},
                    "instructions": self.listing["instructions"],
                }
            elif method == "ping":
                result = {}
            elif method == "tools/list":
                result = {"tools": self.listing["tools"]}
            elif method in _EMPTY:
                result = {_EMPTY[method]: []}
            elif method == "tools/call":
                if not isinstance(params.get("name"), str):
                    return _error(mid, INVALID_PARAMS, "tools/call needs a tool name")
                result = self._call(params["name"], params.get("arguments") or {})
            else:
                return _error(mid, METHOD_NOT_FOUND, "Method not found", method)
        except _RpcError as e:
            return _error(mid, e.code, e.message, e.data)
        except Exception as e:  # noqa: BLE001 — one bad request never ends the session
            return _error(mid, INTERNAL_ERROR, f"{type(e).__name__}: {e}")
        return {"jsonrpc": "2.0", "id": mid, "result": result}

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answered = self._direct(name, arguments)
        if answered is not None:
            return answered
        with_site()
        import asyncio

        from mcp.shared.exceptions import MCPError

        if self._app is None:
            self._app = self.build()
            self._loop = asyncio.new_event_loop()
        try:
            res = self._loop.run_until_complete(self._app.call_tool(name, arguments))
        except MCPError as e:
            raise _RpcError(e.error.code, e.error.message, e.error.data) from None
        except Exception as e:  # noqa: BLE001 — as the SDK server answers a failed tool
            return {"content": [{"type": "text", "text": str(e)}], "isError": True}
        out = res.model_dump(by_alias=True, mode="json", exclude_none=True)
        out.pop("resultType", None)  # the 2026-07-28 envelope's; handshake revisions do not carry it
        return out

    def _direct(self, name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The call answered without the SDK (direct_call.py), or None: the SDK answers it."""
        tool = next((t for t in self.listing["tools"] if t.get("name") == name), None)
        if self.direct is None or tool is None:
            return None
        with_site()  # (pydantic_core, for an answer json would write otherwise than the SDK)
        from agents_room import direct_call, tool_calls

        fn = tool_calls.BY_NAME.get(name)
        if fn is None:
            return None
        if self._tools is None:
            self._tools = self.direct()
        return direct_call.call(tool, fn, self._tools, arguments)


_SITE = {"loaded": False}


def with_site() -> None:
    """Started with -S (a run's configuration starts the front so: no `site` at start, 2-4 ms of
    CPU less per start, issue 30), site-packages and their .pth files (an editable install's path)
    are added here, before the first import beyond the standard library (the SDK, on a tool call)."""
    if sys.flags.no_site and not _SITE["loaded"]:
        import site

        site.main()
        _SITE["loaded"] = True


class _RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _error(mid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": mid, "error": err}


def serve(front: Front, stdin: Any = None, stdout: Any = None) -> None:
    """Binary streams (UTF-8 on the wire whatever the locale); sys.stdin/sys.stdout by default."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    for raw in stdin:
        if not raw.strip():
            continue
        try:
            msg = json_loads(raw)
        except ValueError:
            reply: dict[str, Any] | None = _error(None, PARSE_ERROR, "Parse error")
        else:
            reply = front.handle(msg)
        if reply is not None:
            stdout.write(_encoded(reply) + b"\n")
            stdout.flush()


def _encoded(reply: dict[str, Any]) -> bytes:
    """The reply as one line of UTF-8 JSON; one that cannot be (a lone surrogate, say) is an error
    reply to the same request: the session goes on."""
    try:
        return json_dumps(reply).encode("utf-8")
    except (UnicodeEncodeError, ValueError, TypeError, RecursionError):
        return json_dumps(_error(reply.get("id"), INTERNAL_ERROR, "the answer could not be written as JSON")).encode()


def _read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json_loads(fh.read())


def listing_of(app: Any) -> dict[str, Any]:
    """The SDK server's name, instructions and tools/list, as this front serves them."""
    import asyncio

    tools = asyncio.run(app.list_tools())
    return {"name": app.name, "instructions": app.instructions,
            "tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]}


def run(db_path: str | None = None) -> None:
    def build() -> Any:
        from agents_room.mcp_server import build_server

        return build_server(db_path)

    def direct() -> Any:
        from agents_room import direct_call, tool_calls

        return tool_calls.Tools(db_path, direct_call.ToolFailed)

    serve(Front(_read_json(TOOLS_FILE), build, direct))


if __name__ == "__main__":
    # --serve: serve (as `agents-room mcp`, started as this file: harness_config.mcp_entry(fast=True));
    # --write: refresh mcp_tools.json
    if sys.argv[1:] == ["--serve"]:
        run()
        sys.exit(0)
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m agents_room.mcp_stdio --serve | --write")
    import json

    from agents_room.mcp_server import build_server

    with open(TOOLS_FILE, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(listing_of(build_server()), indent=1, ensure_ascii=False) + "\n")
