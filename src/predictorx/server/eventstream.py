"""The server-sent event streams' response (daemons' push connection, browsers' live updates).

sse-starlette stops an open stream when the server shuts down but returns without the HTTP
response's last, empty body message: uvicorn then logs "ASGI callable returned without completing
response" as an error, and the client reads a cut connection ("incomplete chunk") instead of an end.
This response sends that last message itself, so a shutdown ends every stream cleanly.

To learn of a shutdown, sse-starlette polls the uvicorn server every 0.5 s while any stream is
open: with a daemon connected, the server never stopped waking twice a second (issue 30). Under
the quiet server (server/quietserver.py) a stream waits on an event instead, which the server
sets as it starts to shut down (`stop_streams`); under any other server (uvicorn's own workers,
a test client) sse-starlette's watcher still does it.
"""

from __future__ import annotations

import asyncio
import contextlib

from sse_starlette.sse import EventSourceResponse
from starlette.types import Message, Receive, Scope, Send

#: per event loop served by the quiet server: set when that server shuts down
_stopping: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}


def serve_streams() -> None:
    """The quiet server starts on the running loop: its streams wait for `stop_streams`."""
    _stopping[asyncio.get_running_loop()] = asyncio.Event()


def stop_streams() -> None:
    """The quiet server on the running loop shuts down: every open stream ends."""
    stopping = _stopping.pop(asyncio.get_running_loop(), None)
    if stopping is not None:
        stopping.set()


class EventStream(EventSourceResponse):
    @staticmethod
    async def _listen_for_exit_signal() -> None:
        stopping = _stopping.get(asyncio.get_running_loop())
        if stopping is None:  # not under the quiet server: sse-starlette's own watcher
            await EventSourceResponse._listen_for_exit_signal()
            return
        await stopping.wait()

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
