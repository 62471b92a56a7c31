"""A push's body through the relay (service/forgerelay.py), as it streams in chunks: its command list
is read whole (across chunks, at most MAX_COMMANDS) and checked before a byte goes on, and the
body is counted against the relay's limit as it flows."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from predictorx.service import forgerelay

BRANCH = "agent/bot/t-1"
OLD, NEW = "0" * 40, "a" * 40


def _pkt(line: str) -> bytes:
    return f"{len(line) + 4:04x}".encode() + line.encode()


async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i:i + size]


def _relayed(body: bytes, size: int = 3, limit: int = 1 << 20) -> bytes:
    async def run() -> bytes:
        out = await forgerelay.checked_push(_chunks(body, size), BRANCH, limit)
        return b"".join([chunk async for chunk in out])
    return asyncio.run(run())


def test_the_commands_are_read_across_chunks_and_the_body_goes_on_whole():
    body = _pkt(f"{OLD} {NEW} refs/heads/{BRANCH}\0report-status\n") + b"0000" + b"PACK-and-more"
    assert _relayed(body) == body


@pytest.mark.parametrize("line, status", [
    (f"{OLD} {NEW} refs/heads/main\n", 403),
    (f"{NEW} {OLD} refs/heads/{BRANCH}\n", 403),  # a delete
    (f"{OLD} {NEW} refs/heads/{BRANCH}-other\n", 403),
    (f"{OLD} {NEW}\n", 400),
])
def test_other_refs_deletes_and_garbage_are_refused(line: str, status: int):
    with pytest.raises(forgerelay.RelayRefused) as refused:
        _relayed(_pkt(line) + b"0000PACK")
    assert refused.value.status == status


def test_a_command_list_without_end_or_past_its_bound_is_refused():
    with pytest.raises(forgerelay.RelayRefused) as refused:
        _relayed(_pkt(f"{OLD} {NEW} refs/heads/{BRANCH}\n"))
    assert refused.value.status == 400
    endless = b"".join(_pkt(f"shallow {NEW}\n") for _ in range(forgerelay.MAX_COMMANDS // 40))
    with pytest.raises(forgerelay.RelayRefused) as refused:
        _relayed(endless, size=4096)
    assert refused.value.status == 413


def test_a_body_past_the_limit_stops_as_it_streams():
    body = _pkt(f"{OLD} {NEW} refs/heads/{BRANCH}\n") + b"0000" + b"x" * 5000
    with pytest.raises(forgerelay.TooLarge):
        _relayed(body, size=512, limit=4096)


def test_a_command_list_trickled_a_byte_at_a_time_is_read_in_linear_time():
    """A pass holder sends the command list one byte per chunk (a TCP segment each): the relay must
    not parse everything read so far again on every chunk — on the event loop, 16 KiB of empty
    pkt-lines took ~30 s (32 KiB ~2 min), and the whole server stalled with it."""
    import time

    body = b"0004" * (16 * 1024 // 4)  # empty pkt-lines, no flush: refused when the body ends
    started = time.monotonic()
    with pytest.raises(forgerelay.RelayRefused) as refused:
        _relayed(body, size=1)
    assert refused.value.status == 400
    assert time.monotonic() - started < 3.0


def test_a_daemon_that_goes_away_mid_body_closes_the_forges_connection():
    """The body's iterator raises (ClientDisconnect: the daemon went away mid-pack) while the relay
    sends to the forge: that connection to the forge is closed then (the forge reads its end), not
    left to the collector — and the relay's kept client goes on serving the other pushes."""
    import socket
    import threading

    from starlette.requests import ClientDisconnect

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    accepted = threading.Event()
    threading.Thread(target=lambda: (held.append(listener.accept()[0]), accepted.set()), daemon=True).start()

    async def body() -> AsyncIterator[bytes]:
        yield b"x" * 100
        raise ClientDisconnect()

    async def run() -> None:
        up = forgerelay.Upstream(f"http://127.0.0.1:{listener.getsockname()[1]}/r", "Basic eDp5", BRANCH, False)
        try:
            with pytest.raises(ClientDisconnect):
                await forgerelay.forward(up, "POST", "/git-receive-pack", headers={}, content=body())
            assert not forgerelay._client().is_closed  # (shared: other pushes use it)
            # (the accepting thread may not have kept the connection yet: waited for, not assumed)
            assert await asyncio.to_thread(accepted.wait, 30), "the relay never reached the forge"
            await asyncio.to_thread(read_to_its_end, held[0])  # before the kept client is closed
        finally:
            await forgerelay.close_clients()

    def read_to_its_end(conn: socket.socket) -> None:
        conn.settimeout(30)
        while conn.recv(65536):  # to the end the relay's close makes (a timeout here: left open)
            pass

    try:
        asyncio.run(run())
    finally:
        for s in held + [listener]:
            s.close()


def test_a_body_that_stops_arriving_is_ended_by_the_relay(monkeypatch):
    """A pass holder opens a push and sends part of its command list, then nothing: uvicorn has no
    body timeout and connguard's header timeout never cuts a request being answered, so the relay
    waited for good (behind nginx, `client_body_timeout 120s` ended it; without, nothing did)."""
    monkeypatch.setattr(forgerelay, "BODY_IDLE_S", 0.2, raising=False)

    async def stalled() -> AsyncIterator[bytes]:
        yield _pkt(f"{OLD} {NEW} refs/heads/")
        await asyncio.sleep(3600)
        yield b""

    async def run() -> None:
        stream = getattr(forgerelay, "idle_bounded", lambda body: body)(stalled())  # (what the route reads)
        await forgerelay.checked_push(stream, BRANCH, 1 << 20)

    try:
        asyncio.run(asyncio.wait_for(run(), 5))
    except forgerelay.RelayRefused as refused:
        assert refused.status == 408
    except (asyncio.TimeoutError, TimeoutError):
        pytest.fail("the relay still waited for the body after 5 s (its idle limit was 0.2 s)")
    else:
        pytest.fail("a stalled body was relayed")
