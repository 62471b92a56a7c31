"""Pages and their scripts and styles go out gzip-compressed to a browser that accepts it (issue 26):
what a page weighs is what the browser downloads — htmx alone is 52 KB as a file and 17 KB sent.

The API is left as it is: its answers are small and frequent (a daemon's claims, heartbeats and
message batches), and compressing them would cost the server CPU for nothing. Server-sent event
streams are never compressed (Starlette's GZipMiddleware leaves text/event-stream alone).
"""

from __future__ import annotations

from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

#: Below this a page or file is sent as it is: compressing a few hundred bytes saves nothing.
MINIMUM_SIZE = 1000


class PageCompression:
    def __init__(self, app: ASGIApp):
        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=MINIMUM_SIZE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/api/"):
            await self.gzip(scope, receive, send)
        else:
            await self.app(scope, receive, send)
