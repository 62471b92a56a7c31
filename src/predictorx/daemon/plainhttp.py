"""The daemon's JSON calls to a plain-`http://` server over asyncio streams (issue 30).

A call through httpx costs the daemon ~0.6 ms of CPU on this machine (its request and response
models, h11, httpcore's pool, anyio's cancel scopes); the same exchange over asyncio streams ~0.06
ms. The daemon makes ~9 calls per run and a heartbeat every 10 s, most of its own CPU per run
after the run's set-up. So a server reached over plain HTTP without a proxy — a daemon beside its
server, or on its network — is called through this: one HTTP/1.1 request per connection at a
time, kept-alive connections reused, a response read by its Content-Length or chunked (or to the
connection's end). Anything else (https, a URL httpx would reach through a proxy of the
environment) stays with httpx, and so does the push connection (a stream).

Errors are `OSError`, `asyncio.IncompleteReadError`, `TimeoutError` or `ValueError` (a malformed
response, or one past http1's bounds: its head over 64 KiB, its body over 64 MiB): the caller
treats each as the server being unreachable. A request on a reused connection that the server had
closed meanwhile (its keep-alive timeout) is sent once more on a new connection, as httpx does —
only when nothing of its answer came back (the server had not handled it then). A connection is
kept only when its answer's framing is certain and nothing is left unread in it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2 as httpx

from ..http1 import MAX_HEAD_BYTES, NothingBack, read_stream_response, unread

#: A kept-alive connection idle this long is not reused: the server closes its own after 5 s
#: (server/connguard.py KEEP_ALIVE_SECONDS), and a request racing that close would be sent twice.
IDLE_REUSE_S = 4.0
#: Kept-alive connections per server at most (one per concurrent call).
MAX_IDLE = 8


def eligible(url: str, client: httpx.AsyncClient) -> bool:
    """`url` is plain http and `client` (httpx, reading the environment's `http_proxy`,
    `all_proxy` and `no_proxy` as it does) would reach it directly, not through a proxy."""
    if urlsplit(url).scheme != "http":
        return False
    try:  # (httpx's own decision, so that NO_PROXY means here exactly what it means to httpx)
        return client._transport_for_url(httpx.URL(url)) is client._transport
    except AttributeError:  # another httpx: it makes the calls
        return False


class _NotSent(ConnectionError):
    """The request could not be written: the connection was closed (by the server, while idle)."""


@dataclass
class Response:
    status_code: int
    content: bytes


@dataclass
class _Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = 0.0

    def usable(self) -> bool:
        """Open, not idle too long, and nothing in it unread: bytes that came while it was idle
        were asked for by nobody, and would be read as the next request's answer."""
        return (not self.reader.at_eof() and not self.writer.is_closing() and not unread(self.reader)
                and time.monotonic() - self.idle_since < IDLE_REUSE_S)

    def close(self) -> None:
        self.writer.close()


class PlainHttp:
    """Requests to one or more plain-http base URLs, each bounded by `timeout` seconds."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._idle: dict[tuple[str, int], list[_Conn]] = {}

    async def request(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> Response:
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", "Accept: application/json"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        elif method not in ("GET", "HEAD"):
            head.append("Content-Length: 0")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b"")
        async with asyncio.timeout(self.timeout):
            conn = self._take((host, port))
            if conn is not None:
                try:
                    return await self._exchange((host, port), conn, method, data)
                except (_NotSent, NothingBack):
                    pass  # closed by the server while it was idle: once more, on a new connection
                    # (never once any of the answer came: the server had handled it)
            reader, writer = await asyncio.open_connection(host, port, limit=MAX_HEAD_BYTES)
            return await self._exchange((host, port), _Conn(reader, writer), method, data)

    def _take(self, key: tuple[str, int]) -> _Conn | None:
        pool = self._idle.get(key, [])
        while pool:
            conn = pool.pop()
            if conn.usable():
                return conn
            conn.close()
        return None

    async def _exchange(self, key: tuple[str, int], conn: _Conn, method: str, data: bytes) -> Response:
        try:
            try:
                conn.writer.write(data)
                await conn.writer.drain()
            except ConnectionError as e:
                raise _NotSent(str(e)) from e
            status, keep, content = await _read_response(conn.reader, method)
        except BaseException:
            conn.close()
            raise
        if keep and not unread(conn.reader) and len(self._idle.setdefault(key, [])) < MAX_IDLE:
            conn.idle_since = time.monotonic()
            self._idle[key].append(conn)
        else:
            conn.close()
        return Response(status, content)

    async def aclose(self) -> None:
        for pool in self._idle.values():
            for conn in pool:
                conn.close()
        self._idle.clear()


async def _read_response(reader: asyncio.StreamReader, method: str) -> tuple[int, bool, bytes]:
    """(status, whether the connection may be reused, body) of one response."""
    version, status, headers, body = await read_stream_response(reader, method)
    chunked, length = "transfer-encoding" in headers, headers.get("content-length")
    if chunked and length is not None:  # (RFC 9112 §6.3: read as chunked, then the connection closes)
        framed = False
    elif status == 204:  # (a broken server's 204 with a body would leave it unread)
        framed = not chunked and length in (None, "0")
    else:  # (304 and HEAD's answers name the length they would have; no body follows)
        framed = chunked or length is not None or status == 304 or method == "HEAD"
    keep = framed and version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    return status, keep, body
