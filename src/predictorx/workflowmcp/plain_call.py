"""A harness tool's one JSON call to a plain-`http://` server without a proxy, over a socket (issue 30).

Importing httpx costs ~70 ms of CPU, most of what is left of a run's first tool call once the SDK is
not imported (direct_call.py); the tool makes one call. So where httpx would reach the server
directly over plain HTTP — `direct_to` says when: the environment's proxy variables read as
urllib reads them for httpx, and only the cases where that reading is plain — the call is one
HTTP/1.1 request on its own connection (`Connection: close`), the answer read by its
Content-Length, chunked, or to the connection's end, interim (1xx) answers skipped, a head over
64 KiB or a body over MAX_BODY_BYTES refused. Anything else (https, a proxy that may apply, a URL
or token httpx would encode or refuse, query parameters, not Linux — where urllib also reads the
system's proxy settings) goes through httpx (harness_tools.Api). A failure is `CallFailed`, named
as httpx names it (ConnectError, ReadTimeout, …), so the agent reads the same sentence either way.
"""

from __future__ import annotations

import os
import sys
from typing import Any
from urllib.parse import urlsplit

from ..http1 import parse_head

TIMEOUT_S = 30.0
#: The most of a response's status line and headers read (h11's default limit, as httpx)
MAX_HEAD_BYTES = 64 * 1024
#: The most of a response's body read (a harness answer is a few KiB)
MAX_BODY_BYTES = 64 * 1024 * 1024
#: What a URL may hold to be sent as it is (httpx would percent-encode anything else)
_URL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/[]@%!$&'()*+,;=")


class CallFailed(Exception):
    """The server was not reached or did not answer in HTTP; `str()` is httpx's name for it."""


def environment_proxies() -> dict[str, str]:
    """`urllib.request.getproxies_environment()` (what httpx reads on Linux), without importing
    urllib.request (~25 ms of CPU): `<scheme>_proxy` in any case, a lower-case one winning and
    an empty lower-case one removing it; no `http` under CGI (REQUEST_METHOD set)."""
    proxies: dict[str, str] = {}
    for name, value in os.environ.items():
        lower = name.lower()
        if value and lower[-6:] == "_proxy":
            proxies[lower[:-6]] = value
    if "REQUEST_METHOD" in os.environ:
        proxies.pop("http", None)
    for name, value in os.environ.items():
        if name[-6:] == "_proxy":
            if value:
                proxies[name.lower()[:-6]] = value
            else:
                proxies.pop(name.lower()[:-6], None)
    return proxies


def direct_to(url: str, token: str = "") -> bool:
    """httpx would call `url` directly over plain http with these exact bytes: Linux, an ASCII URL
    it sends as it is, a token fit for a header, and no proxy for it — no `http` or `all` proxy in
    the environment, or `no` naming its host exactly (or `*`)."""
    if not sys.platform.startswith("linux") or not set(url) <= _URL_CHARS:
        return False
    if not token.isascii() or not token.isprintable():
        return False
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname or parts.username or parts.password or parts.query:
        return False
    proxies = environment_proxies()
    if not proxies.get("http") and not proxies.get("all"):
        return True
    entries = {e.strip().lower() for e in proxies.get("no", "").split(",")}
    return "*" in entries or parts.hostname.lower() in entries


def request(url: str, method: str, path: str, headers: dict[str, str], body: bytes | None) -> tuple[int, bytes]:
    """(status, body) of one request to `url` + `path` (both ASCII)."""
    import socket

    parts = urlsplit(url)
    lines = [f"{method} {parts.path.rstrip('/')}{path} HTTP/1.1", f"Host: {parts.netloc}", "Accept: */*",
             "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    try:
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + (body or b"")
    except UnicodeEncodeError:
        raise CallFailed("LocalProtocolError") from None
    try:
        conn = socket.create_connection((parts.hostname or "", parts.port or 80), timeout=TIMEOUT_S)
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
        return _Answer(conn).read()


class _Answer:
    """The response on `conn`, read as far as it goes and no further."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.buf, self.closed = conn, b"", False

    def _more(self) -> None:
        import socket

        try:
            chunk = self.conn.recv(65536)
        except socket.timeout:
            raise CallFailed("ReadTimeout") from None
        except OSError:
            raise CallFailed("ReadError") from None
        if not chunk:
            self.closed = True
        self.buf += chunk

    def _take_until(self, mark: bytes, limit: int) -> bytes:
        while (at := self.buf.find(mark)) < 0:
            if len(self.buf) > limit or self.closed:
                raise CallFailed("RemoteProtocolError")
            self._more()
        if at > limit:
            raise CallFailed("RemoteProtocolError")
        out, self.buf = self.buf[:at], self.buf[at + len(mark):]
        return out

    def _take(self, size: int) -> bytes:
        while len(self.buf) < size:
            if self.closed:
                raise CallFailed("RemoteProtocolError")
            self._more()
        out, self.buf = self.buf[:size], self.buf[size:]
        return out

    def read(self) -> tuple[int, bytes]:
        while True:
            parsed = parse_head(self._take_until(b"\r\n\r\n", MAX_HEAD_BYTES))
            if parsed is None:
                raise CallFailed("RemoteProtocolError")
            _version, code, fields = parsed
            if code == 101:
                raise CallFailed("RemoteProtocolError")
            if code >= 200:
                return code, self._body(fields)

    def _body(self, fields: dict[str, str]) -> bytes:
        if "chunked" in fields.get("transfer-encoding", "").lower():
            out = b""
            while True:
                size_text = self._take_until(b"\r\n", 1024).split(b";")[0].strip()
                if not size_text or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
                    raise CallFailed("RemoteProtocolError")
                size = int(size_text, 16)
                if size == 0:
                    return out
                if len(out) + size > MAX_BODY_BYTES:
                    raise CallFailed("RemoteProtocolError")
                out += self._take(size)
                if self._take(2) != b"\r\n":
                    raise CallFailed("RemoteProtocolError")
        if "content-length" in fields:
            text = fields["content-length"]
            if not text.isdigit() or int(text) > MAX_BODY_BYTES:
                raise CallFailed("RemoteProtocolError")
            return self._take(int(text))
        while not self.closed:  # (framed by the connection's end)
            if len(self.buf) > MAX_BODY_BYTES:
                raise CallFailed("RemoteProtocolError")
            self._more()
        return self.buf
