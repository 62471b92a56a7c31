"""The server-sent event streams' response (daemons' push connection, browsers' live updates).

sse-starlette stops an open stream when the server shuts down but returns without the HTTP
response's last, empty body message: uvicorn then logs "ASGI callable returned without completing
response" as an error, and the client reads a cut connection ("incomplete chunk") instead of an end.
This response sends that last message itself, so a shutdown ends every stream cleanly.
"""

from __future__ import annotations

import contextlib

from sse_starlette.sse import EventSourceResponse
from starlette.types import Message, Receive, Scope, Send


class EventStream(EventSourceResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = ended = False

        async def tracked(message: Message) -> None:
            nonlocal started, ended
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                ended = True
            await send(message)

        await super().__call__(scope, receive, tracked)
        if started and not ended:
            with contextlib.suppress(Exception):  # the client may have gone already: nothing to end
                await send({"type": "http.response.body", "body": b"", "more_body": False})
