"""Headers every answer carries (R-SEC-7): no framing, no content sniffing, no URL leaks.

`frame-ancestors 'none'` (and the older X-Frame-Options) stop clickjacking; `form-action 'self'`
and `base-uri 'self'` keep an injected form or <base> from sending a page's data elsewhere;
`nosniff` stops a browser from running an uploaded or echoed text as script; Referrer-Policy
keeps page addresses (task ids, sign-in links) from leaking to other sites. Headers a route set
itself are kept.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)


class SecurityHeaders:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {k.lower() for k, _ in headers}
                headers.extend((k, v) for k, v in SECURITY_HEADERS if k not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
