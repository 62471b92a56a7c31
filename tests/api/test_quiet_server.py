"""An idle server wakes once a second, not ten times (issue 30): uvicorn's main loop ticked every
0.1 s to refresh its Date header and look whether to stop. A stop is still prompt."""

from __future__ import annotations

import asyncio
import signal
import time

import uvicorn

from predictorx.server.quietserver import QuietServer
from predictorx.testing import free_port


async def _app(scope, receive, send):  # the smallest ASGI app: lifespan and a 204
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


class _Counting(QuietServer):
    ticks = 0

    async def on_tick(self, counter: int) -> bool:
        self.ticks += 1
        return await super().on_tick(counter)


def test_an_idle_server_ticks_once_a_second_and_stops_at_once():
    async def scenario() -> tuple[int, float, float]:
        server = _Counting(uvicorn.Config(_app, host="127.0.0.1", port=free_port(), log_level="warning"))
        serving = asyncio.create_task(server.serve())
        while not server.started:
            assert not serving.done()
            await asyncio.sleep(0.01)
        before, started = server.ticks, time.monotonic()
        await asyncio.sleep(3.0)  # the window the ticks are counted over
        ticks, window = server.ticks - before, time.monotonic() - started
        asked = time.monotonic()
        server.handle_exit(signal.SIGTERM, None)  # as uvicorn's SIGTERM handler calls it
        server._captured_signals.clear()  # (uvicorn raises it again once stopped: not in pytest)
        await asyncio.wait_for(serving, 10)
        return ticks, window, time.monotonic() - asked

    ticks, window, stop_s = asyncio.run(scenario())
    assert ticks <= window + 1, ticks  # uvicorn's own loop: ~30 in 3 s
    assert stop_s < 0.5, stop_s
