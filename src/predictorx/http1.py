"""An HTTP/1 response, read the one way the hand-written clients need it: the CLI's (apiclient.py)
and a harness tool's (workflowmcp/plain_call.py), each a blocking socket for its start time, and
the daemon's (daemon/plainhttp.py and daemon/smartpush.py, asyncio streams, for their CPU per
call). Imports nothing at its start, so the CLI's start does not pay for it."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    import socket

#: The most of a response's status line and headers read (h11's default limit, as httpx's)
MAX_HEAD_BYTES = 64 * 1024
#: The most of a response's body read by `read_response` (the API's answers are far smaller)
MAX_BODY_BYTES = 64 * 1024 * 1024


class Malformed(ValueError):
    """The response is not HTTP/1 as its framing says, or passes a bound: the sentence says how."""


def parse_head(head: bytes) -> tuple[str, int, dict[str, str]] | None:
    """(HTTP version, status, header fields lower-cased) of a response head without its blank
    line, or None when it is not an HTTP/1 status line. A field given twice is one value, the
    two joined by ", " (as HTTP combines them): two Content-Lengths are then no number."""
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not (code.isascii() and code.isdigit()) or code < "100":
        return None
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            fields[name] = f"{fields[name]}, {value}" if name in fields else value
    return version, int(code), fields


async def read_head(reader: "asyncio.StreamReader") -> tuple[str, int, dict[str, str]]:
    """One response head read from `reader` (to its blank line) and parsed; ValueError when it
    is larger than the reader's limit or not an HTTP/1 response."""
    import asyncio

    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as e:
        raise ValueError("response headers too large") from e
    parsed = parse_head(raw[:-4])
    if parsed is None:
        raise ValueError(f"not an HTTP/1 response: {raw[:80]!r}")
    return parsed


def read_response(sock: "socket.socket", method: str, timeout: float) -> tuple[int, bytes]:
    """(status, body) of the response to a `method` request, read from a blocking socket as far
    as its framing goes and no further (Content-Length, chunks, or the connection's end), within
    `timeout` seconds all told (a server that sends a byte now and then is not waited on for
    ever): a server that keeps the connection open is not waited on, interim (1xx) answers are
    passed over, and heads past 64 KiB together or a body past its bound are refused as they
    arrive. `Malformed` for anything else; the socket's own errors and TimeoutError go to the
    caller as they are."""
    import time

    reader = _Reader(sock, time.monotonic() + timeout)
    budget = MAX_HEAD_BYTES  # (every head's, the interim answers' too)
    try:
        while True:
            head = reader.until(b"\r\n\r\n", budget, f"the answer's head is larger than {MAX_HEAD_BYTES >> 10} KiB")
            budget -= len(head) + 4
            parsed = parse_head(head)
            if parsed is None:
                raise Malformed("the server's answer is not HTTP")
            _version, code, fields = parsed
            if code == 101:
                raise Malformed("the server switched protocols")
            if code >= 200:
                no_body = method == "HEAD" or code in (204, 304)
                return code, b"" if no_body else reader.body(fields)
    except Malformed:
        raise
    except ValueError as e:  # (whatever this reading missed: never a traceback for a person)
        raise Malformed(f"the server's answer is not HTTP ({e})") from None


class _Reader:
    def __init__(self, sock: "socket.socket", deadline: float) -> None:
        self.sock, self.deadline, self.buf, self.closed = sock, deadline, bytearray(), False

    def _more(self) -> None:
        import time

        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the answer did not arrive in time")
        self.sock.settimeout(left)
        chunk = self.sock.recv(65536)
        self.closed = not chunk
        self.buf += chunk

    def until(self, mark: bytes, limit: int, too_long: str) -> bytes:
        while (at := self.buf.find(mark)) < 0:
            if len(self.buf) > limit:
                raise Malformed(too_long)
            if self.closed:
                raise Malformed("the answer was cut short" if self.buf else "the server closed the connection")
            self._more()
        if at > limit:
            raise Malformed(too_long)
        out = bytes(self.buf[:at])
        del self.buf[:at + len(mark)]
        return out

    def take(self, size: int) -> bytes:
        while len(self.buf) < size:
            if self.closed:
                raise Malformed(f"the answer was cut short ({len(self.buf)} of {size} bytes)")
            self._more()
        with memoryview(self.buf) as view:  # (one copy of a large body, not two)
            out = bytes(view[:size])
        del self.buf[:size]
        return out

    def body(self, fields: dict[str, str]) -> bytes:
        if "transfer-encoding" in fields:
            if fields["transfer-encoding"].lower() != "chunked":
                raise Malformed(f"the answer's transfer coding {fields['transfer-encoding'][:40]!r} is not chunked")
            return self._chunks()
        if "content-length" in fields:
            text = fields["content-length"]
            if not (text.isascii() and text.isdigit()) or len(text) > 18:
                raise Malformed("the answer's Content-Length is not a number")
            if int(text) > MAX_BODY_BYTES:
                raise Malformed(f"the answer is larger than {MAX_BODY_BYTES >> 20} MiB")
            return self.take(int(text))
        while not self.closed:  # (framed by the connection's end)
            if len(self.buf) > MAX_BODY_BYTES:
                raise Malformed(f"the answer is larger than {MAX_BODY_BYTES >> 20} MiB")
            self._more()
        return bytes(self.buf)

    def _chunks(self) -> bytes:
        out = bytearray()
        while True:
            size_text = self.until(b"\r\n", 1024, "the answer's chunks are malformed").split(b";")[0].strip()
            if not size_text or len(size_text) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
                raise Malformed("the answer's chunks are malformed")
            size = int(size_text, 16)
            if size == 0:
                return bytes(out)  # (trailers, if any, are left unread: the connection closes)
            if len(out) + size > MAX_BODY_BYTES:
                raise Malformed(f"the answer is larger than {MAX_BODY_BYTES >> 20} MiB")
            out += self.take(size)
            if self.take(2) != b"\r\n":
                raise Malformed("the answer's chunks are malformed")
