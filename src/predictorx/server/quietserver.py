"""uvicorn's server, woken once a second instead of ten times (issue 30).

uvicorn's main loop sleeps 0.1 s between ticks, and each tick only refreshes the Date header
(once a second) and checks whether to stop: an idle server woke ten times a second for nothing.
Here the loop waits one second, or less when it is told to stop (a signal, or `handle_exit`
from code: the wait is an event), so stopping is as quick as before."""

from __future__ import annotations

import asyncio
import sys
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.main import STARTUP_FAILURE

from . import eventstream

#: uvicorn refreshes the Date header on ticks where counter % 10 == 0; every tick here is one
TICK_S = 1.0


class QuietServer(uvicorn.Server):
    _wake: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    async def main_loop(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        eventstream.serve_streams()  # its streams hear of the shutdown below, without polling
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000
            try:
                await asyncio.wait_for(self._wake.wait(), TICK_S)
            except asyncio.TimeoutError:
                pass
            should_exit = await self.on_tick(counter)

    async def shutdown(self, sockets: Any = None) -> None:
        eventstream.stop_streams()  # open event streams end first: uvicorn waits for them
        await super().shutdown(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self.wake()

    def wake(self) -> None:
        """Tick now (after `should_exit` was set from outside the signal handlers)."""
        if self._loop is not None and self._wake is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake.set)


def serve(app: Any, **options: Any) -> None:
    """`uvicorn.run(app, **options)` for one process, with the quiet server."""
    server = QuietServer(uvicorn.Config(app, **options))
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    if not server.started:
        sys.exit(STARTUP_FAILURE)
