"""A response read from a blocking socket by its framing and no further (http1.read_response): the
CLI's client (apiclient.py) and a harness tool's call (workflowmcp/plain_call.py) read answers this
one way. Before it was shared, the CLI read a chunked or kept-alive answer to the connection's end,
took a 1xx answer for the answer, and held an endless head in memory."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from predictorx.apiclient import Client, CliError
from predictorx.http1 import MAX_HEAD_BYTES, Malformed, read_response


class _Conn:
    """A connection whose answer arrives in `pieces`, then stays open (keep-alive) or closes."""

    def __init__(self, *pieces: bytes, closes: bool = True) -> None:
        self.pieces, self.closes, self.reads = list(pieces), closes, 0

    def settimeout(self, seconds: float) -> None:
        pass

    def recv(self, n: int) -> bytes:
        self.reads += 1
        if self.pieces:
            return self.pieces.pop(0)
        if self.closes:
            return b""
        raise AssertionError("read past the end of a complete answer")


def _read(*pieces: bytes, closes: bool = True, method: str = "GET") -> tuple[int, bytes]:
    return read_response(_Conn(*pieces, closes=closes), method, 30)  # type: ignore[arg-type]


def test_an_answer_is_read_by_its_framing_and_no_further() -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4;x=y\r\n\": 1\r\n1\r\n}\r\n0\r\n\r\n"
    assert _read(chunked[:20], chunked[20:50], chunked[50:], closes=False) == (200, b'{"a": 1}')
    assert _read(b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}", closes=False) == (201, b"{}")
    assert _read(b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]",
                 closes=False) == (200, b"[]")
    assert _read(b"HTTP/1.0 404 Not Found\r\n\r\nno ", b"length") == (404, b"no length")
    assert _read(b"HTTP/1.1 204 No Content\r\n\r\n", closes=False) == (204, b"")  # (no body, whatever follows)
    assert _read(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", closes=False, method="HEAD") == (200, b"")


@pytest.mark.parametrize("bad, sentence", [
    (b"", "the server closed the connection"),
    (b"garbage", "the answer was cut short"),
    (b"garbage\r\n\r\n", "the server's answer is not HTTP"),
    (b"HTTP/1.1 2xx OK\r\n\r\n", "not HTTP"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}", r"cut short \(2 of 9 bytes\)"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length is not a number"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", "larger than 64 MiB"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunks are malformed"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n", "chunks are malformed"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX", "chunks are malformed"),
    (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", "switched protocols"),
    # what a review found escaping as a ValueError traceback, or read leniently
    (b"HTTP/1.1 \xb200 OK\r\n\r\n", "not HTTP"),
    (b"HTTP/1.1 099 Odd\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "not HTTP"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n{}", "Content-Length is not a number"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", "Content-Length is not a number"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 1\r\n\r\n{}", "Content-Length is not a number"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "transfer coding"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"f" * 40 + b"\r\n", "chunks are malformed"),
])
def test_what_cannot_be_read_is_one_sentence(bad: bytes, sentence: str) -> None:
    with pytest.raises(Malformed, match=sentence):
        _read(bad)


def test_interim_answers_share_one_head_budget() -> None:
    """A server that sends `100 Continue` for ever is refused once 64 KiB of heads arrived."""
    conn = _Conn(*[b"HTTP/1.1 100 Continue\r\n\r\n" * 1000] * 1000)
    with pytest.raises(Malformed, match="head is larger than 64 KiB"):
        read_response(conn, "GET", 30)  # type: ignore[arg-type]
    assert conn.reads < 10


def test_a_server_that_trickles_is_not_waited_on_past_the_timeout() -> None:
    class Trickle(_Conn):
        def recv(self, n: int) -> bytes:
            time.sleep(0.05)
            return b"x"
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        read_response(Trickle(), "GET", 0.5)  # type: ignore[arg-type]
    assert time.monotonic() - started < 5


def test_an_endless_head_is_refused_at_its_limit_not_at_its_end() -> None:
    conn = _Conn(b"HTTP/1.1 200 OK\r\n", *[b"X-Filler: " + b"x" * 65000 + b"\r\n"] * 1000)
    with pytest.raises(Malformed, match="head is larger than 64 KiB"):
        read_response(conn, "GET", 30)  # type: ignore[arg-type]
    assert conn.reads * 65536 < 4 * MAX_HEAD_BYTES


def answering(*pieces: bytes) -> tuple[str, Callable[[], None]]:
    """A server on loopback that answers one request with `pieces` and keeps the connection open
    (as a kept-alive server does): its URL, and a function that closes it."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def answer() -> None:
        conn, _ = listener.accept()
        held.append(conn)
        conn.recv(65536)
        for piece in pieces:
            conn.sendall(piece)

    threading.Thread(target=answer, daemon=True).start()

    def close() -> None:
        for conn in held:
            conn.close()
        listener.close()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", close


@pytest.fixture
def one_answer() -> Iterator[Callable[..., str]]:
    """`answering`, closed when the test ends."""
    closers: list[Callable[[], None]] = []

    def start(*pieces: bytes) -> str:
        url, close = answering(*pieces)
        closers.append(close)
        return url
    yield start
    for close in closers:
        close()


def test_the_cli_reads_a_kept_alive_chunked_answer_at_once(one_answer) -> None:
    url = one_answer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"a\": 1}\r\n0\r\n\r\n")
    started = time.monotonic()
    assert Client(server_url=url, token="t", timeout=20).get("/api/x") == {"a": 1}
    assert time.monotonic() - started < 10  # (it waited for the connection's end: the timeout)


def test_the_cli_passes_over_an_interim_answer(one_answer) -> None:
    url = one_answer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"b\":2}")
    assert Client(server_url=url, token="t", timeout=20).get("/api/x") == {"b": 2}


def test_the_cli_says_when_a_200_is_not_json(one_answer) -> None:
    url = one_answer(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 15\r\n\r\n<html>hi</html>")
    with pytest.raises(CliError, match="not JSON: '<html>hi</html>'; is PREDICTORX_SERVER_URL"):
        Client(server_url=url, token="t", timeout=20).get("/api/x")


def test_the_cli_refuses_an_endless_head_with_a_sentence(one_answer) -> None:
    url = one_answer(b"HTTP/1.1 200 OK\r\n", *[b"X-Filler: " + b"x" * 8000 + b"\r\n"] * 20)
    with pytest.raises(CliError, match="head is larger than 64 KiB"):
        Client(server_url=url, token="t", timeout=20).get("/api/x")
