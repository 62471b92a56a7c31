"""A harness tool's one JSON call to a plain-`http://` server without a proxy, over a socket (issue 30).

Importing httpx costs ~70 ms of CPU, most of what is left of a run's first tool call once the SDK is
not imported (direct_call.py); the tool makes one call. So where httpx would reach the server
directly over plain HTTP — `direct_to` says when, on the environment's proxy settings as httpx
reads them, and only in the cases where that reading is plain — the call is one HTTP/1.1 request
on its own connection (`Connection: close`), the answer read by its Content-Length, chunked, or
to the connection's end. Anything else (https, a proxy that may apply, query parameters) goes
through httpx (harness_tools.Api). A failure is `CallFailed`, named as httpx names it (ConnectError,
ReadTimeout, …), so the agent reads the same sentence either way.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

TIMEOUT_S = 30.0
#: The most of a response's status line and headers read (h11's default limit, as httpx)
MAX_HEAD_BYTES = 64 * 1024
_PROXY_VARS = ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


class CallFailed(Exception):
    """The server was not reached or did not answer in HTTP; `str()` is httpx's name for it."""


def direct_to(url: str) -> bool:
    """`url` is plain http and httpx, with the environment's proxy variables, would call it
    directly: no proxy variable for http is set, or NO_PROXY names its host exactly (or is `*`)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname or parts.username or parts.password:
        return False
    if not any(os.environ.get(v) for v in _PROXY_VARS):
        return True
    entries = {e.strip().lower() for e in (os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or "").split(",")}
    return "*" in entries or parts.hostname.lower() in entries


def request(url: str, method: str, path: str, headers: dict[str, str], body: bytes | None) -> tuple[int, bytes]:
    """(status, body) of one request to `url` + `path`."""
    import socket

    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 80
    lines = [f"{method} {parts.path.rstrip('/')}{path} HTTP/1.1", f"Host: {parts.netloc}", "Accept: */*",
             "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
    try:
        conn = socket.create_connection((host, port), timeout=TIMEOUT_S)
    except socket.timeout:
        raise CallFailed("ConnectTimeout") from None
    except OSError:
        raise CallFailed("ConnectError") from None
    with conn:
        try:
            conn.sendall(data)
        except socket.timeout:
            raise CallFailed("WriteTimeout") from None
        except OSError:
            raise CallFailed("WriteError") from None
        received = _read_all(conn)
    return _parse(received)


def _read_all(conn: Any) -> bytes:
    import socket

    chunks: list[bytes] = []
    while True:
        try:
            chunk = conn.recv(65536)
        except socket.timeout:
            raise CallFailed("ReadTimeout") from None
        except OSError:
            raise CallFailed("ReadError") from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _parse(received: bytes) -> tuple[int, bytes]:
    head, sep, rest = received.partition(b"\r\n\r\n")
    if not sep or len(head) > MAX_HEAD_BYTES:
        raise CallFailed("RemoteProtocolError")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    version, _, tail = status_line.partition(" ")
    code = tail[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise CallFailed("RemoteProtocolError")
    fields = {}
    for line in header_lines:
        name, colon, value = line.partition(":")
        if not colon:
            raise CallFailed("RemoteProtocolError")
        fields[name.strip().lower()] = value.strip()
    if "chunked" in fields.get("transfer-encoding", "").lower():
        return int(code), _unchunk(rest)
    if "content-length" in fields:
        try:
            length = int(fields["content-length"])
        except ValueError:
            raise CallFailed("RemoteProtocolError") from None
        if length < 0 or len(rest) < length:
            raise CallFailed("RemoteProtocolError")
        return int(code), rest[:length]
    return int(code), rest


def _unchunk(rest: bytes) -> bytes:
    out: list[bytes] = []
    while True:
        size_line, sep, rest = rest.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0].strip(), 16)
        except ValueError:
            raise CallFailed("RemoteProtocolError") from None
        if not sep or size < 0 or len(rest) < size:
            raise CallFailed("RemoteProtocolError")
        if size == 0:
            return b"".join(out)
        out.append(rest[:size])
        rest = rest[size + 2:]
