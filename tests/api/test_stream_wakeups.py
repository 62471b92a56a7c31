"""An open event stream costs the server nothing between events (issue 30): the stream waits on
its subscription's queue without a timer (it woke every 5 s to look at its connection), and under
the quiet server it hears of a shutdown from an event (sse-starlette polled the server every
0.5 s for as long as any stream was open). A disconnect and a shutdown still end it at once."""

from __future__ import annotations

import asyncio
import signal
import time
from types import SimpleNamespace
from typing import Any

import uvicorn
from sse_starlette import sse

from predictorx.server.eventstream import EventStream
from predictorx.server.hub import Hub
from predictorx.server.quietserver import QuietServer
from predictorx.server.routes import daemons as routes
from predictorx.testing import free_port

WAIT_S = 30.0  # generous: a loaded 2-core machine


def test_a_stream_waits_for_its_next_event_without_a_timer(monkeypatch: Any) -> None:
    timers: list[float] = []
    real_wait_for = asyncio.wait_for

    async def wait_for(awaitable: Any, timeout: float | None) -> Any:
        timers.append(timeout or 0)
        return await real_wait_for(awaitable, timeout)

    monkeypatch.setattr(asyncio, "wait_for", wait_for)

    async def scenario() -> None:
        hub = Hub()
        hub.bind(asyncio.get_running_loop())
        sub = hub.subscribe("ws", daemon_id="d1")
        stream = routes._stream(SimpleNamespace(hub=hub), sub, hello={"type": "hello"})  # type: ignore[arg-type]
        assert "hello" in (await stream.__anext__())["data"]
        taking = asyncio.ensure_future(stream.__anext__())
        for _ in range(20):
            await asyncio.sleep(0)
        assert not taking.done() and timers == [], timers
        hub.publish([{"workspace_id": "ws", "type": "task_queued"}])
        assert "task_queued" in (await asyncio.wait_for(taking, WAIT_S))["data"]
        sub.close()  # its token ended (server/streamwatch.py): the stream ends at its next take
        try:
            await asyncio.wait_for(stream.__anext__(), WAIT_S)
            raise AssertionError("the stream went on after its subscription closed")
        except StopAsyncIteration:
            pass
        assert sub not in hub.subscribers()

    asyncio.run(scenario())


async def _forever():
    yield {"data": "hello"}
    await asyncio.Event().wait()


async def _app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await EventStream(_forever(), ping=15)(scope, receive, send)


def test_under_the_quiet_server_a_stream_does_not_poll_for_shutdown_and_ends_with_it(monkeypatch: Any) -> None:
    looks: list[float] = []
    real = sse._get_uvicorn_server

    def counted() -> Any:
        looks.append(time.monotonic())
        return real()

    monkeypatch.setattr(sse, "_get_uvicorn_server", counted)

    async def scenario() -> float:
        port = free_port()
        server = QuietServer(uvicorn.Config(_app, host="127.0.0.1", port=port, log_level="warning",
                                            timeout_graceful_shutdown=20))
        serving = asyncio.create_task(server.serve())
        async with asyncio.timeout(WAIT_S):
            while not server.started:
                await asyncio.sleep(0.01)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        seen = b""
        async with asyncio.timeout(WAIT_S):
            while b"hello" not in seen:
                seen += await reader.read(4096)
        await asyncio.sleep(1.5)  # the window: sse-starlette would look three times in it
        assert looks == [], looks
        asked = time.monotonic()
        server.handle_exit(signal.SIGTERM, None)  # as uvicorn's SIGTERM handler calls it
        server._captured_signals.clear()  # (uvicorn raises it again once stopped: not in pytest)
        async with asyncio.timeout(WAIT_S):
            while await reader.read(4096):  # the stream ends: the server closes the connection
                pass
        await asyncio.wait_for(serving, WAIT_S)
        writer.close()
        return time.monotonic() - asked

    stop_s = asyncio.run(scenario())
    assert stop_s < 5.0, stop_s  # (timeout_graceful_shutdown 20: the stream ended, it was not cut off)


def test_without_the_quiet_server_a_stream_still_hears_of_a_shutdown() -> None:
    """Elsewhere (uvicorn's own workers) sse-starlette's watcher is still what ends streams."""
    async def scenario() -> None:
        sse.AppStatus.should_exit = False
        listening = asyncio.ensure_future(EventStream._listen_for_exit_signal())
        await asyncio.sleep(0.1)
        assert not listening.done()
        sse.AppStatus.should_exit = True
        try:
            await asyncio.wait_for(listening, WAIT_S)
        finally:
            sse.AppStatus.should_exit = False

    asyncio.run(scenario())
