"""The daemon's proxy of an allowlist run (issue 29), on its Unix socket, without a sandbox: what it
refuses and how (a 403 with a sentence, never a hang), its limits, and the allowlist's grammar."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from predictorx import allowhosts
from predictorx.daemon import netpolicy
from predictorx.daemon.netproxy import RunProxy


async def _upstream() -> tuple[asyncio.AbstractServer, int, list[bytes]]:
    """A loopback server that records the head it got and answers one line."""
    got: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], got


async def _until(condition) -> None:
    while not condition():
        await asyncio.sleep(0.01)


async def _proxy(tmp_path: Path, entries: list[str], **limits: float) -> tuple[RunProxy, list[str], Path]:
    notes: list[str] = []

    async def note(sentence: str) -> None:
        notes.append(sentence)
    proxy = RunProxy(allowhosts.parse_list(entries), agent="fenced", notify=note, **limits)  # type: ignore[arg-type]
    path = tmp_path / "p.sock"
    await proxy.start(path)
    return proxy, notes, path


async def _ask(path: Path, head: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    reader, writer = await asyncio.open_unix_connection(str(path))
    writer.write(head)
    await writer.drain()
    answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    return reader, writer, answer


async def test_an_allowed_host_is_tunnelled_and_forwarded_and_others_are_refused_with_a_sentence(tmp_path):
    up, port, got = await _upstream()
    proxy, notes, path = await _proxy(tmp_path, [f"127.0.0.1:{port}"])
    try:
        reader, writer, answer = await _ask(path, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 200")
        writer.write(b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        assert (await asyncio.wait_for(reader.read(), 10)).endswith(b"ok")
        # Plain HTTP: the absolute URL becomes a path, the proxy's own headers go, one request only.
        reader, writer, answer = await _ask(path, f"GET http://127.0.0.1:{port}/y?z=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                  "Proxy-Connection: keep-alive\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 200")
        assert got[-1] == b"GET /y?z=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        # Not on the list: another port, a name (never resolved: a 403, not a 502), https absolute form.
        for target in (f"CONNECT 127.0.0.1:{port + 1}", f"CONNECT localhost:{port}", "CONNECT unlisted.invalid:443"):
            _, _, answer = await _ask(path, f"{target} HTTP/1.1\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 403"), (target, answer)
        assert notes == [f"network: refused {h} — not on agent fenced's allowlist; its owner can add it: predictorx "
                         f"agent update fenced --network allowlist --allow-host {h} (with the others)"
                         for h in (f"127.0.0.1:{port + 1}", f"localhost:{port}", "unlisted.invalid:443")]
        # A host the agent made up to say something in the run's messages is shown short and plain.
        _, _, answer = await _ask(path, b"CONNECT **<b>hi</b>**" + b"x" * 500 + b":443 HTTP/1.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 403") and notes[-1].startswith("network: refused **?b?hi??b?**xxx")
        assert len(notes[-1]) < 400 and "<" not in notes[-1]
        _, _, answer = await _ask(path, b"GET https://127.0.0.1/ HTTP/1.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400")
    finally:
        await proxy.close()
        up.close()


async def test_connections_are_bounded_per_run_and_a_silent_one_is_closed(tmp_path):
    up, port, _ = await _upstream()
    proxy, notes, path = await _proxy(tmp_path, [f"127.0.0.1:{port}"], max_connections=2, head_timeout=0.5)
    try:
        quiet = [await asyncio.open_unix_connection(str(path)) for _ in range(2)]
        await asyncio.wait_for(_until(lambda: proxy.open_connections == 2), 10)  # the proxy has taken both
        _, _, answer = await _ask(path, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 503"), answer
        assert any("holds 2 open" in n for n in notes), notes
        # The two that never sent a request are answered and closed after the head timeout.
        for reader, _ in quiet:
            assert (await asyncio.wait_for(reader.read(), 10)).startswith(b"HTTP/1.1 400")
        assert proxy.open_connections == 0
    finally:
        await proxy.close()
        up.close()


async def test_a_tunnel_to_an_allowed_name_is_closed_when_idle(tmp_path):
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
    up = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = up.sockets[0].getsockname()[1]
    proxy, _, path = await _proxy(tmp_path, [f"localhost:{port}"], idle_timeout=0.5)
    try:  # (an allowed name: resolved on the daemon's side, each address tried in turn)
        reader, _, answer = await _ask(path, f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 200")
        assert await asyncio.wait_for(reader.read(), 10) == b""
    finally:
        await proxy.close()
        up.close()


def test_the_allowlist_grammar_and_matching():
    entries = allowhosts.parse_list(["API.example.com.", "*.cdn.example.org", "127.0.0.1:8080", "[::1]:9"])
    assert [str(e) for e in entries] == ["api.example.com:443", "*.cdn.example.org:443", "127.0.0.1:8080", "[::1]:9"]
    assert allowhosts.allowed(entries, "api.example.com", 443) and allowhosts.allowed(entries, "API.EXAMPLE.COM.", 443)
    assert not allowhosts.allowed(entries, "api.example.com", 80)
    assert allowhosts.allowed(entries, "a.b.cdn.example.org", 443) and not allowhosts.allowed(entries, "cdn.example.org", 443)
    assert allowhosts.allowed(entries, "::1", 9) and allowhosts.allowed(entries, "[::1]", 9)
    # An address matches only itself; a name never matches by what it resolves to, nor a disguised address.
    assert not allowhosts.allowed(entries, "localhost", 8080) and not allowhosts.allowed(entries, "2130706433", 8080)
    assert [e.loopback for e in entries] == [False, False, True, True]
    for bad in ("", "*", "*.com", "a..b", "x:0", "x:65536", "::1", "-a.com", "127.1", "a b", "a" * 301):
        with pytest.raises(allowhosts.BadEntry):
            allowhosts.parse_entry(bad)
    assert [str(e) for e in netpolicy.server_entries(["http://127.0.0.1:8765", "https://px.example.com"])] == \
        ["127.0.0.1:8765", "px.example.com:443"]
    assert netpolicy.pins_from("Model.Test.=127.0.0.1, forge=[::1],junk") == {"model.test": "127.0.0.1", "forge": "::1"}
    assert "needs the sandbox" in netpolicy.unsandboxed_refusal("a", "allowlist", False)
    assert netpolicy.unsandboxed_refusal("a", "allowlist", True) is None
