"""Cross-site request forgery is refused for every state-changing request (R-SEC-7).

SameSite=Strict does not separate sites that differ only by port (every `127.0.0.1:<port>` is
one "site"), so a page served by anything else on the machine could post with the person's
cookie. One ASGI middleware decides for every route — API, pages, and any htmx form added later:

- Safe methods (GET, HEAD, OPTIONS) pass.
- A request whose `Origin` is present must come from this server: the origin's host[:port]
  equals the `Host` the browser addressed, or is listed in `PREDICTORX_ALLOWED_ORIGINS`
  (comma-separated, for a proxy that rewrites Host). `Origin: null` is refused.
- Without `Origin`, a browser's `Sec-Fetch-Site: cross-site|same-site` is refused, and a request
  that would act with the session cookie must show a same-origin `Referer`.
- Requests with neither a cookie nor a browser's headers (the CLI, daemons, agents: bearer
  tokens, which no other site can make a browser send) pass.

Refusals are 403 with a sentence, before authentication or any parsing.
"""

from __future__ import annotations

import json
import os
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
COOKIE = b"px_token="
ENV = "PREDICTORX_ALLOWED_ORIGINS"


def _netloc(url: str) -> str | None:
    """host[:port] of an origin or URL, default ports dropped, lower-cased; None if unusable."""
    try:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    default = 443 if parts.scheme == "https" else 80
    return host if port in (None, default) else f"{host}:{port}"


def _host_netloc(host: str) -> str:
    host = host.strip().lower()
    for default in (":80", ":443"):
        if host.endswith(default):
            return host[: -len(default)]
    return host


def allowed_origins() -> set[str]:
    extra = os.environ.get(ENV, "")
    return {n for n in (_netloc(o) for o in extra.split(",") if o.strip()) if n}


class OriginGuard:
    def __init__(self, app: ASGIApp):
        self.app = app
        self.extra = allowed_origins()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        problem = self._problem(scope)
        if problem is None:
            await self.app(scope, receive, send)
            return
        body = json.dumps({"detail": problem}).encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def _problem(self, scope: Scope) -> str | None:
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", ()):
            headers.setdefault(key, value)
        host = _host_netloc(headers.get(b"host", b"").decode("latin-1"))
        origin = headers.get(b"origin")
        refused = ("cross-origin request refused: this server accepts changes only from its own pages "
                   f"(set {ENV} if it is served under another address)")
        if origin is not None:
            seen = _netloc(origin.decode("latin-1"))
            if seen is None or (seen != host and seen not in self.extra):
                return refused
            return None
        site = headers.get(b"sec-fetch-site", b"").lower()
        if site in (b"cross-site", b"same-site"):
            return refused
        uses_cookie = COOKIE in headers.get(b"cookie", b"") and b"authorization" not in headers
        if uses_cookie:
            referer = headers.get(b"referer")
            seen = _netloc(referer.decode("latin-1")) if referer else None
            if seen is None or (seen != host and seen not in self.extra):
                return ("this request acts with your session cookie but does not say which page sent it "
                        "(no Origin or Referer header); send it from the web UI, or use a bearer token")
        return None
