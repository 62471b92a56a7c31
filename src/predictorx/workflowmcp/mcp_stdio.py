"""`predictorx mcp`: the stdio transport in front of the SDK server (mcp_server.py), fast to start.

Claude Code waits for its MCP servers before its first model request, and importing the MCP SDK
costs about a second of CPU per task. So the handshake (`initialize`, `ping`) and `tools/list` are
answered here with the standard library, from mcp_tools.json — the SDK server's own listing,
written by `python -m predictorx.workflowmcp.mcp_stdio --write` and checked against the live SDK by
tests/test_harness_mcp_front.py. A tool call is answered here too, by the tool's own function
(harness_tools.py, direct_call.py: ~0.6 s of CPU less at a run's first call, issue 30), when its
arguments plainly fit the listed schema; any other call goes to the SDK, imported then, which runs
it exactly as the SDK server does (`MCPServer.call_tool`). agents-room's `agents-room mcp`
does the same (its own copy: it is a separate distribution that shares no code with this one).
With `--agents-room F` (a Claude Code run whose agents-room allows it, daemon/rooms.py) it also lists
agents-room's tools and forwards their calls to agents-room's own front (room_forward.py): one MCP
process per run instead of two (issue 30).

The daemon starts it as `python -S mcp_stdio_start.py --env-file F` (this file as `__main__`, from its
bytecode): no package `__init__`, no runpy, no CLI import, and only sys and json's C half (`_json`,
not the json package: issue 30) before the first answer (issue 9: Claude Code waits for it); `os`
(~1 ms of CPU at start) comes with the first tool call, and the env file's values are put into the
environment then (`Front.env`), before anything that reads them runs.
Newline-delimited JSON-RPC 2.0 over stdin/stdout, the MCP stdio transport, one request at a time.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # (typing, like pathlib and os, costs start-up time this front exists to save)
if TYPE_CHECKING:
    import os
    from typing import Any, Callable


def _folder(path: str) -> str:
    """`os.path.dirname(os.path.abspath(path))` without importing os for an absolute POSIX path
    (what `__file__` is when started as a file, or imported from an absolute sys.path entry)."""
    if not path.startswith("/"):
        import os

        return os.path.dirname(os.path.abspath(path))
    return path.rstrip("/").rpartition("/")[0] or "/"


if __name__ == "__main__" and not __package__:  # started as a file: its package's root, not its folder, on the path
    sys.path[0] = _folder(_folder(_folder(__file__)))

TOOLS_FILE = _folder(__file__) + "/mcp_tools.json"
#: What the daemon starts: this file as `__main__`, from its bytecode (mcp_stdio_start.py).
START_FILE = _folder(__file__) + "/mcp_stdio_start.py"
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
    """One stdio session: `listing` is {"name", "instructions", "tools"}; `build` makes the SDK server.
    `forward`: agents-room's MCP entry whose tools `forwarded` names (room_forward.py), or None."""

    def __init__(self, listing: dict[str, Any], build: Callable[[], Any], forward: dict[str, Any] | None = None,
                 forwarded: frozenset[str] = frozenset(), env: dict[str, str] | None = None,
                 direct: Callable[[], dict[str, Callable[..., Any]]] | None = None) -> None:
        self.listing = listing
        #: makes {name: tool function} for calls answered here without the SDK (direct_call.py), or None
        self.direct = direct
        self._direct_tools: dict[str, Callable[..., Any]] | None = None
        #: PREDICTORX_* values (env_file_values) for the environment, put there before the first tool call
        self.env = env
        self.build = build
        self.forward, self.forwarded = forward, forwarded
        self.protocol = HANDSHAKE_VERSIONS[-1]  # as agreed in `initialize`: the forwarded child's too
        self._app: Any = None
        self._loop: Any = None
        self._forwarder: Any = None

    def handle(self, msg: Any) -> dict[str, Any] | None:
        if not isinstance(msg, dict) or "method" not in msg:
            return None  # a response to us (we send no requests) or junk without an id
        if "id" not in msg:
            return None  # a notification (initialized, cancelled, …)
        mid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        try:
            if method == "initialize":
                offered = params.get("protocolVersion")
                self.protocol = offered if offered in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
                result: Any = {
                    "protocolVersion": self.protocol,
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
                self._environ()
                result = self._call(params["name"], params.get("arguments") or {})
            else:
                return _error(mid, METHOD_NOT_FOUND, "Method not found", method)
        except _RpcError as e:
            return _error(mid, e.code, e.message, e.data)
        except Exception as e:  # noqa: BLE001 — one bad request never ends the session
            return _error(mid, INTERNAL_ERROR, f"{type(e).__name__}: {e}")
        return {"jsonrpc": "2.0", "id": mid, "result": result}

    def _environ(self) -> None:
        if self.env is not None:
            import os

            os.environ.update(self.env)
            self.env = None

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if name in self.forwarded and self.forward is not None:
            return self._forward(name, arguments)
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
        with_site()
        from predictorx.workflowmcp import direct_call

        if self._direct_tools is None:
            self._direct_tools = self.direct()
        fn = self._direct_tools.get(name)
        return None if fn is None else direct_call.call(tool, fn, arguments)

    def _forward(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """An agents-room tool: its own front answers (started on the first such call)."""
        from predictorx.workflowmcp import room_forward

        if self._forwarder is None:
            self._forwarder = room_forward.Forwarder(self.forward)  # type: ignore[arg-type]
        try:
            answer = self._forwarder.call(name, arguments, self.protocol)
        except room_forward.ForwardFailed as e:
            return {"content": [{"type": "text", "text": str(e)}], "isError": True}
        if "error" in answer:
            err = answer["error"] if isinstance(answer["error"], dict) else {}
            raise _RpcError(err.get("code", INTERNAL_ERROR), str(err.get("message", "agents-room failed")), err.get("data"))
        return answer.get("result") or {}

    def close(self) -> None:
        """Input ended: a forwarded child is told so (and killed if it lingers)."""
        if self._forwarder is not None:
            self._forwarder.close()


def with_forwarded(listing: dict[str, Any], path: str) -> tuple[dict[str, Any], dict[str, Any], frozenset[str]]:
    """(`listing` with agents-room's tools and instructions added, agents-room's MCP entry, the names
    of the tools it answers) from the daemon's file of run-config's `mcp` entry (daemon/rooms.py)."""
    forward = _read_json(path)
    theirs = _read_json(forward["tools_file"])
    own = {t["name"] for t in listing["tools"]}
    added = [t for t in theirs["tools"] if t["name"] not in own]
    instructions = "\n\n".join(x for x in (listing.get("instructions"), theirs.get("instructions")) if x)
    merged = {**listing, "instructions": instructions, "tools": [*listing["tools"], *added]}
    return merged, forward, frozenset(t["name"] for t in added)


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


def _read_json(path: str | os.PathLike[str]) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json_loads(fh.read())


def listing_of(app: Any) -> dict[str, Any]:
    """The SDK server's name, instructions and tools/list, as this front serves them."""
    import asyncio

    tools = asyncio.run(app.list_tools())
    return {"name": app.name, "instructions": app.instructions,
            "tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]}


def env_file_values(path: str | os.PathLike[str]) -> dict[str, str]:
    """The PREDICTORX_* values of the daemon's 0600 file."""
    try:
        values = _read_json(path)
    except (OSError, ValueError):
        raise SystemExit(f"{path} is not a readable JSON file of PREDICTORX_* values") from None
    return {k: str(v) for k, v in values.items() if k.startswith("PREDICTORX_")}


def load_env_file(path: str | os.PathLike[str]) -> None:
    """PREDICTORX_* values from the daemon's 0600 file into this process's environment."""
    import os

    os.environ.update(env_file_values(path))


def direct_tools() -> dict[str, Callable[..., Any]]:
    """The harness's tools by name, for the calls the front answers itself (Front.direct)."""
    from predictorx.workflowmcp import direct_call, harness_tools

    return {fn.__name__: fn for fn in harness_tools.functions(harness_tools.Api(direct_call.ToolFailed))}


def run(forward_file: str | None = None, env: dict[str, str] | None = None) -> None:
    """Serve until end of input; `forward_file`: also agents-room's tools (with_forwarded); `env`:
    values put into the environment before the first tool call (Front.env)."""
    def build() -> Any:
        from predictorx.workflowmcp.mcp_server import build_server

        return build_server()

    listing: dict[str, Any] = _read_json(TOOLS_FILE)
    forward: dict[str, Any] | None = None
    forwarded: frozenset[str] = frozenset()
    if forward_file is not None:
        try:
            listing, forward, forwarded = with_forwarded(listing, forward_file)
        except (OSError, ValueError, KeyError, TypeError) as e:  # our own tools still work
            sys.stderr.write(f"predictorx mcp: agents-room's tools are not offered ({forward_file}: {e})\n")
    front = Front(listing, build, forward, forwarded, env, direct_tools)
    try:
        serve(front)
    finally:
        front.close()


if __name__ == "__main__":
    # --write: refresh mcp_tools.json; --env-file F [--agents-room G]: serve, as the daemon starts it
    if sys.argv[1:] == ["--write"]:
        import json

        from predictorx.workflowmcp.mcp_server import build_server

        with open(TOOLS_FILE, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(listing_of(build_server()), indent=1, ensure_ascii=False) + "\n")
    elif len(sys.argv) in (3, 5) and sys.argv[1] == "--env-file" and sys.argv[3:4] in ([], ["--agents-room"]):
        run(sys.argv[4] if len(sys.argv) == 5 else None, env_file_values(sys.argv[2]))
    else:
        sys.exit("usage: python -m predictorx.workflowmcp.mcp_stdio --env-file FILE [--agents-room FILE] | --write")
