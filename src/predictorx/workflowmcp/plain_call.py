"""A harness tool's one JSON call to a plain-`http://` server without a proxy, over a socket (issue 30).

Importing httpx costs ~70 ms of CPU, most of what is left of a run's first tool call once the SDK is
not imported (direct_call.py); the tool makes one call. So where httpx would reach the server
directly over plain HTTP — `direct_to` says when: the environment's proxy variables read as
urllib reads them for httpx, and only the cases where that reading is plain — the call is one
HTTP/1.1 request on its own connection (`Connection: close`), the answer read as http1.read_response
reads it (by its framing and no further, interim answers skipped, a head over 64 KiB or a body over
64 MiB refused). Anything else (https, a proxy that may apply, a URL
or token httpx would encode or refuse, query parameters, not Linux — where urllib also reads the
system's proxy settings) goes through httpx (harness_tools.Api). A failure is `CallFailed`, named
as httpx names it (ConnectError, ReadTimeout, …), so the agent reads the same sentence either way.
"""

from __future__ import annotations

import os
import sys
from urllib.parse import urlsplit

from ..http1 import Malformed, read_response

TIMEOUT_S = 30.0
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
        try:
            return read_response(conn, method, TIMEOUT_S)
        except socket.timeout:
            raise CallFailed("ReadTimeout") from None
        except Malformed:
            raise CallFailed("RemoteProtocolError") from None
        except OSError:
            raise CallFailed("ReadError") from None
