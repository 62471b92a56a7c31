"""Request bodies are bounded and valid text before anything parses or authenticates them (R-SEC-3, R-SEC-7).

A pure ASGI middleware, outermost of the app's own, so every route — API, web pages, forms a
later module adds — gets it without asking:

- **Size.** A body over the limit (`PREDICTORX_MAX_BODY_BYTES`, default 10 MiB) answers 413 with
  a sentence. A declared Content-Length over the limit is refused before a byte is read; a chunked
  body is counted as it streams and refused the moment it passes the limit, so a 150 MB upload
  costs the server at most the limit in memory, whoever sends it.
- **Text.** A JSON body must be UTF-8 and must not carry a lone surrogate (`"\\ud800"` is valid
  JSON syntax but no character): Python would accept it and then fail when the text reaches the
  database or a response — after a commit. Such a body answers 400 and changes nothing.

The body is read here (it is bounded) and handed on unchanged; bodies of requests that declare
none pass straight through. The one exception is a push or fetch through the forge relay
(`streamed`): its pack streams on to the forge under the relay's own limit
(service/forgerelay.py, `PREDICTORX_MAX_PUSH_BYTES`), never held here.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024
MIN_MAX_BODY_BYTES = 2 * 1024 * 1024
ENV = "PREDICTORX_MAX_BODY_BYTES"

#: The forge relay's git bodies (routes/forge_relay.py): streamed, bounded by the relay itself.
_STREAMED = re.compile(r"^/api/daemon/tasks/[^/]+/git/git-(receive|upload)-pack$")

# A JSON escape that may stand for a surrogate; only when one appears is the body parsed here.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def max_body_bytes() -> int:
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BODY_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{ENV} must be a number of bytes, got {raw!r}") from None
    if value < MIN_MAX_BODY_BYTES:  # a daemon's message batch (1 MiB) and finish report must fit
        raise ValueError(f"{ENV} must be at least {MIN_MAX_BODY_BYTES} bytes (2 MiB), got {value}")
    return value


def _human(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def text_problem(body: bytes) -> str | None:
    """Why a JSON body is not valid text, or None. Cheap unless the body has surrogate escapes."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"the request body is not valid UTF-8 (byte {e.start}); send UTF-8 encoded JSON"
    if _SURROGATE_ESCAPE.search(body) is None:
        return None
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return None  # not JSON at all: the route's own parser says so
    if _has_lone_surrogate(parsed):
        return ("the request contains text that is not valid Unicode (a lone surrogate such as \\ud800); "
                "send the text as valid UTF-8")
    return None


def streamed(scope: Scope) -> bool:
    """A POST whose body streams past this guard: a git pack through the forge relay."""
    return scope.get("method") == "POST" and _STREAMED.match(scope.get("path", "")) is not None


def _is_json(scope: Scope) -> bool:
    for key, value in scope.get("headers", ()):
        if key == b"content-type":
            ctype = value.split(b";", 1)[0].strip().lower()
            return ctype == b"application/json" or ctype.endswith(b"+json")
    return False


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _has_body(scope: Scope) -> bool:
    for key, value in scope.get("headers", ()):
        if key == b"transfer-encoding" and b"chunked" in value.lower():
            return True
        if key == b"content-length" and value.strip() not in (b"", b"0"):
            return True
    return False


async def _answer(scope: Scope, send: Send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    accept = b""
    for key, value in scope.get("headers", ()):
        if key == b"accept":
            accept = value
    if b"text/html" in accept:  # a browser's form: a readable page, not JSON
        from html import escape

        body = (f"<!doctype html><title>{status}</title><p>{escape(message)}</p>").encode()
        ctype = b"text/html; charset=utf-8"
    else:
        ctype = b"application/json"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", ctype), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyGuard:
    def __init__(self, app: ASGIApp, max_bytes: int | None = None):
        self.app = app
        self.max_bytes = max_bytes if max_bytes is not None else max_body_bytes()

    def _too_large(self) -> str:
        return (f"the request body is larger than this server accepts ({_human(self.max_bytes)}); send less "
                f"at once (the limit is set by {ENV})")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope) or streamed(scope):
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await _answer(scope, send, 413, self._too_large())
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client went away mid-body: nothing to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                chunks.clear()
                await _answer(scope, send, 413, self._too_large())
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        chunks.clear()
        if _is_json(scope):
            problem = text_problem(body)
            if problem:
                await _answer(scope, send, 400, problem)
                return
        await self.app(scope, replay_body(body, receive), send)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """The body once, then whatever the client sends next (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
