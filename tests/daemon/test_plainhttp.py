"""The daemon's calls to a plain-http server over asyncio streams (daemon/plainhttp.py, issue 30):
what HTTP/1.1 gives back is read right (a length, chunks, the connection's end), connections are
kept and reused, one the server closed while idle costs a retry on a new connection and not the
call, a silent server is a timeout, and ServerApi sends its calls this way — unless the URL is
https or a proxy is configured, which stay with httpx."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from predictorx import http1
from predictorx.daemon import plainhttp
from predictorx.daemon.plainhttp import PlainHttp
from predictorx.daemon.serverapi import ServerApi, ServerError

WAIT_S = 30.0  # generous: a loaded 2-core machine

#: the request's bytes → the raw response (b"": close at once; None: say nothing)
Reply = Callable[[bytes], bytes | None]


class _Server:
    """A loopback HTTP server whose every answer the test writes by hand."""

    def __init__(self, reply: Reply, *, close_after: bool = False) -> None:
        self.reply, self.close_after = reply, close_after
        self.connections = 0
        self.requests: list[bytes] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                answer = self.reply(request)
                if answer == b"":  # read, then the connection closed without a word
                    writer.close()
                    return
                if answer is None:
                    await asyncio.sleep(3600)
                    return
                writer.write(answer)
                await writer.drain()
                if self.close_after:
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        for w in self.writers:
            w.close()
        self.server.close()


def _json(status: int, body: Any, extra: str = "") -> bytes:
    data = json.dumps(body).encode()
    return f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n{extra}\r\n".encode() + data


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Any]]:
    servers: list[_Server] = []

    async def start(reply: Reply, **kw: Any) -> tuple[_Server, str]:
        s = _Server(reply, **kw)
        servers.append(s)
        return s, await s.start()

    yield start
    for s in servers:
        await s.stop()


async def test_lengths_chunks_and_the_connections_end(serve: Callable[..., Any]) -> None:
    answers = iter([
        _json(200, {"a": 1}),
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        b"4;x=y\r\n{\"b\"\r\n4\r\n: 2}\r\n0\r\nx-trailer: 1\r\n\r\n",
        b"HTTP/1.0 200 OK\r\n\r\n{\"c\": 3}",
    ])
    server, url = await serve(lambda _req: next(answers), close_after=False)
    http = PlainHttp(timeout=10)
    try:
        first = await http.request("POST", url + "/x?q=1", b'{"k":1}', {"Authorization": "Bearer t"})
        assert (first.status_code, json.loads(first.content)) == (200, {"a": 1})
        second = await http.request("GET", url + "/y", None, {})
        assert json.loads(second.content) == {"b": 2}
        assert server.connections == 1, "a kept-alive connection was not reused"
        # HTTP/1.0 without a length: the body is what comes before the connection ends
        server.close_after = True
        third = await http.request("GET", url + "/z", None, {})
        assert json.loads(third.content) == {"c": 3}
    finally:
        await http.aclose()
    sent = server.requests[0].decode()
    assert sent.startswith("POST /x?q=1 HTTP/1.1\r\n")
    assert "Authorization: Bearer t\r\n" in sent and "Content-Length: 7\r\n" in sent and sent.endswith('{"k":1}')


async def test_a_connection_the_server_closed_while_idle_is_replaced(serve: Callable[..., Any]) -> None:
    server, url = await serve(lambda _req: _json(200, {"ok": True}))
    http = PlainHttp(timeout=10)
    try:
        await http.request("GET", url + "/a", None, {})
        for w in server.writers:  # the server's keep-alive timeout, say
            w.close()
        await asyncio.sleep(0.1)
        assert (await http.request("GET", url + "/b", None, {})).status_code == 200
        assert server.connections == 2
    finally:
        await http.aclose()


async def test_a_reused_connection_closed_as_the_request_arrives_is_retried_once(serve: Callable[..., Any]) -> None:
    answers = iter([_json(200, {"n": 1}), b"", _json(200, {"n": 2})])
    server, url = await serve(lambda _req: next(answers))
    http = PlainHttp(timeout=10)
    try:
        await http.request("GET", url + "/a", None, {})
        second = await http.request("POST", url + "/b", b"{}", {})
        assert json.loads(second.content) == {"n": 2}
        assert server.connections == 2 and len(server.requests) == 3
    finally:
        await http.aclose()


async def test_an_idle_connection_older_than_the_reuse_limit_is_not_reused(
        serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plainhttp, "IDLE_REUSE_S", 0.0)
    server, url = await serve(lambda _req: _json(200, {}))
    http = PlainHttp(timeout=10)
    try:
        await http.request("GET", url + "/a", None, {})
        await http.request("GET", url + "/b", None, {})
        assert server.connections == 2
    finally:
        await http.aclose()


async def test_a_silent_server_is_a_timeout(serve: Callable[..., Any]) -> None:
    _server, url = await serve(lambda _req: None)
    http = PlainHttp(timeout=0.5)
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(http.request("GET", url + "/a", None, {}), 30)
    finally:
        await http.aclose()


_OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"


@pytest.mark.parametrize("answer, why", [
    (b"HTTP/1.1 200 OK\r\ncontent-length: 1000000000000\r\n\r\n{}", "larger than"),
    (b"HTTP/1.0 200 OK\r\n\r\n" + b"x" * 5000, "larger than"),  # (to the connection's end)
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n7d0\r\n" + b"x" * 2000 + b"\r\n0\r\n\r\n", "larger than"),
    (b"HTTP/1.1 100 Continue\r\n\r\n" * 3000 + _OK, "head is larger"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", "not chunked"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", "chunks are malformed"),
    (b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n{}", "not a number"),
    (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", "switched protocols"),
], ids=["length-past-bound", "to-the-end-past-bound", "chunks-past-bound", "interim-flood", "gzip-chunked",
        "chunk-size-not-hex", "negative-length", "switching"])
async def test_an_answer_past_a_bound_or_not_http_is_refused_as_it_arrives(
        serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, answer: bytes, why: str) -> None:
    """The daemon's client reads by http1's rules, as the CLI's does (a broken or hostile server,
    or something else on its port): a body past the bound is refused before it is held, not read
    to the end or waited for; interim answers count against one head budget."""
    monkeypatch.setattr(http1, "MAX_BODY_BYTES", 1000)
    _server, url = await serve(lambda _req: answer, close_after=answer.startswith(b"HTTP/1.0"))
    http = PlainHttp(timeout=30)
    try:
        with pytest.raises(http1.Malformed, match=why):
            await asyncio.wait_for(http.request("GET", url + "/a", None, {}), 60)
    finally:
        await http.aclose()


async def test_an_answer_to_head_has_no_body_to_wait_for(serve: Callable[..., Any]) -> None:
    _server, url = await serve(lambda _req: b"HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n")
    http = PlainHttp(timeout=30)
    try:
        answer = await asyncio.wait_for(http.request("HEAD", url + "/a", None, {}), 60)
        assert (answer.status_code, answer.content) == (200, b"")
    finally:
        await http.aclose()


def _ok(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


@pytest.mark.parametrize("close_after", [False, True], ids=["kept-open", "then-closed"])
async def test_bytes_past_an_answer_are_never_read_as_the_next_one(serve: Callable[..., Any], close_after: bool) -> None:
    """A server that writes more than its framing says (a bug, a header injected upstream): the
    connection is not kept, so the next call gets its own answer, not the leftovers (every later
    call would be one answer behind, and a claim or finish believed answered never sent)."""
    answers = iter([_ok(b'{"n": 1}') + _ok(b'{"n": "INJECTED"}'), _ok(b'{"n": 2}')])
    server, url = await serve(lambda _req: next(answers), close_after=close_after)
    http = PlainHttp(timeout=30)
    try:
        assert json.loads((await http.request("GET", url + "/1", None, {})).content) == {"n": 1}
        second = await http.request("POST", url + "/2", b"{}", {})
        assert json.loads(second.content) == {"n": 2} and len(server.requests) == 2
    finally:
        await http.aclose()


async def test_bytes_that_come_while_a_connection_is_idle_make_it_unusable(serve: Callable[..., Any]) -> None:
    server, url = await serve(lambda _req: _ok(b"{}"))
    http = PlainHttp(timeout=30)
    try:
        await http.request("GET", url + "/1", None, {})
        server.writers[0].write(_ok(b'{"n": "UNASKED"}'))
        await server.writers[0].drain()
        conn = http._idle[next(iter(http._idle))][0]
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while not conn.reader._buffer:  # (until it arrived)
            assert asyncio.get_running_loop().time() < deadline, "the unasked bytes never arrived"
            await asyncio.sleep(0.01)
        assert json.loads((await http.request("GET", url + "/2", None, {})).content) == {}
        assert server.connections == 2
    finally:
        await http.aclose()


@pytest.mark.parametrize("first", [
    b"HTTP/1.1 204 No Content\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
], ids=["204-with-a-body", "chunked-and-a-length"])
async def test_an_answer_whose_framing_is_uncertain_ends_its_connection(serve: Callable[..., Any], first: bytes) -> None:
    """A 204 that says it has a body, or an answer with both a length and chunks (RFC 9112 §6.3):
    read as well as it can be, and the connection not kept for the next call."""
    answers = iter([first, _ok(b'{"n": 2}')])
    server, url = await serve(lambda _req: next(answers))
    http = PlainHttp(timeout=30)
    try:
        await http.request("POST", url + "/1", b"{}", {})
        assert json.loads((await http.request("GET", url + "/2", None, {})).content) == {"n": 2}
        assert server.connections == 2
    finally:
        await http.aclose()


async def test_a_request_whose_answer_was_cut_short_is_not_sent_again(serve: Callable[..., Any]) -> None:
    """On a reused connection: once any of the answer came, the server had handled the request
    (a claim, a finish): it is an error for the caller, never sent a second time."""
    answers = iter([_ok(b"{}"), b'HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\n{"tasks": ['])
    server, url = await serve(lambda _req: next(answers))
    http = PlainHttp(timeout=30)
    try:
        await http.request("GET", url + "/a", None, {})
        server.close_after = True
        with pytest.raises(asyncio.IncompleteReadError):
            await http.request("POST", url + "/api/daemon/claim", b'{"limit":1}', {})
        assert [r.split(b" ")[1] for r in server.requests] == [b"/a", b"/api/daemon/claim"]
    finally:
        await http.aclose()


async def test_server_api_calls_a_plain_http_server_without_httpx(serve: Callable[..., Any]) -> None:
    server, url = await serve(lambda req: _json(200, {"cancelled": []}) if b"/heartbeat" in req
                              else _json(409, {"detail": "no"}))
    api = ServerApi(url, "tok", workspace="ws")

    async def no_httpx(*_a: Any, **_kw: Any) -> Any:
        raise AssertionError("the call went through httpx")

    api.http.request = no_httpx  # type: ignore[method-assign]
    try:
        assert await api.heartbeat(["t-1"]) == []
        with pytest.raises(ServerError) as refused:
            await api.call("POST", "/api/other", {"x": 1}, retries=3)
        assert (refused.value.status, refused.value.detail) == (409, "no")
        assert len(server.requests) == 2, "a 4xx was retried"
    finally:
        await api.close()
    sent = server.requests[0].decode()
    assert "Authorization: Bearer tok\r\n" in sent and "X-Workspace: ws\r\n" in sent
    assert sent.endswith('{"task_ids":["t-1"]}')


async def test_a_transient_failure_is_retried_and_an_unreachable_url_fails_over(serve: Callable[..., Any]) -> None:
    answers = iter([_json(503, {"detail": "restarting"}), _json(200, {"ok": 1})])
    server, url = await serve(lambda _req: next(answers))
    dead = "http://127.0.0.1:9"  # (discard: nothing listens on loopback)
    api = ServerApi([dead, url], "tok")
    try:
        assert await api.call("GET", "/api/x", retries=3) == {"ok": 1}
        assert api.server_url == url and len(server.requests) == 2
    finally:
        await api.close()


def test_https_and_a_proxied_url_stay_with_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    assert ServerApi(["http://127.0.0.1:8484", "https://px.example.com"], "t")._plain_urls == {"http://127.0.0.1:8484"}
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example.com:3128")
    assert ServerApi("http://px.example.com:8484", "t")._plain_urls == set()
    # NO_PROXY as httpx reads it (the bench's and realcli's environment: a dead proxy, loopback exempt)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    api = ServerApi(["http://127.0.0.1:8484", "http://localhost:8484", "http://px.example.com:8484"], "t")
    assert api._plain_urls == {"http://127.0.0.1:8484", "http://localhost:8484"}
