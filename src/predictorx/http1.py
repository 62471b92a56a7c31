"""An HTTP/1 response, read the one way the hand-written clients need it: the CLI's (apiclient.py)
and a harness tool's (workflowmcp/plain_call.py), each a blocking socket for its start time, and
the daemon's (daemon/plainhttp.py and daemon/smartpush.py, asyncio streams, for their CPU per
call): one set of framing rules and bounds (`framing`, `chunk_size`) for all of them. Imports
nothing at its start, so the CLI's start does not pay for it."""

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


class NothingBack(ConnectionError):
    """The connection ended before any byte of the answer came (`read_stream_response`): on a
    kept-alive connection, the server had closed it while idle — the one case where a request may
    be sent again without having been handled twice."""


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


TOO_LARGE = f"the answer is larger than {MAX_BODY_BYTES >> 20} MiB"
CHUNKS_MALFORMED = "the answer's chunks are malformed"


def framing(fields: dict[str, str], limit: float | None = None) -> tuple[str, int]:
    """How a response's body ends, by its head: ("chunked", 0), ("length", n) or ("close", 0)
    (to the connection's end). `Malformed` for a transfer coding other than chunked, a
    Content-Length that is not one plain number (differing duplicates are joined, so they are
    not), or one past `limit` (MAX_BODY_BYTES; a streaming reader bounds what it keeps itself) —
    one rule for every hand-written client."""
    if "transfer-encoding" in fields:
        if fields["transfer-encoding"].lower() != "chunked":
            raise Malformed(f"the answer's transfer coding {fields['transfer-encoding'][:40]!r} is not chunked")
        return "chunked", 0
    if "content-length" in fields:
        text = fields["content-length"]
        if not (text.isascii() and text.isdigit()) or len(text) > 18:
            raise Malformed("the answer's Content-Length is not a number")
        if int(text) > (MAX_BODY_BYTES if limit is None else limit):
            raise Malformed(TOO_LARGE)
        return "length", int(text)
    return "close", 0


def chunk_size(line: bytes, so_far: int, limit: int | None = None) -> int:
    """A chunk's size from its size line (extensions dropped); `Malformed` when it is not hex or
    the body would pass `limit` (MAX_BODY_BYTES) with it (`so_far` read already)."""
    text = line.split(b";")[0].strip()
    if not text or len(text) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in text):
        raise Malformed(CHUNKS_MALFORMED)
    size = int(text, 16)
    if so_far + size > (MAX_BODY_BYTES if limit is None else limit):
        raise Malformed(TOO_LARGE)
    return size


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


def unread(reader: "asyncio.StreamReader") -> bool:
    """Whether a stream holds bytes no answer has read: past an answer, or come while the
    connection was idle, they would be read as the next request's answer, so the connection is
    not used again. (StreamReader has no public peek: its buffer, or, on a Python that keeps it
    elsewhere, assume some.)"""
    return bool(getattr(reader, "_buffer", True))


async def read_stream_response(reader: "asyncio.StreamReader", method: str) -> tuple[str, int, dict[str, str], bytes]:
    """(HTTP version, status, header fields, body) of the response to a `method` request, read
    from asyncio streams by the same rules as `read_response` (the caller bounds the time): the
    interim answers' heads and the answer's within 64 KiB together, the body by its framing and
    within MAX_BODY_BYTES, a chunked body's trailers read to their end (the connection stays
    usable). `Malformed` for what is not HTTP/1 or passes a bound; `NothingBack` when the
    connection ended before any of the answer came; the stream's other errors
    (IncompleteReadError, OSError) go to the caller as they are."""
    import asyncio

    budget = MAX_HEAD_BYTES
    try:
        try:
            raw = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as e:
            if e.partial:
                raise
            raise NothingBack("the server closed the connection without answering") from e
        except ConnectionResetError as e:
            raise NothingBack("the server reset the connection without answering") from e
        while True:
            budget -= len(raw)
            if budget < 0:
                raise Malformed(f"the answer's head is larger than {MAX_HEAD_BYTES >> 10} KiB")
            parsed = parse_head(raw[:-4])
            if parsed is None:
                raise Malformed(f"not an HTTP/1 response: {raw[:80]!r}")
            version, code, fields = parsed
            if code == 101:
                raise Malformed("the server switched protocols")
            if code >= 200:
                break
            raw = await reader.readuntil(b"\r\n\r\n")
        if method == "HEAD" or code in (204, 304):
            return version, code, fields, b""
        kind, length = framing(fields)
        if kind == "length":
            return version, code, fields, await reader.readexactly(length)
        if kind == "close":
            body = bytearray()
            while chunk := await reader.read(65536):
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    raise Malformed(TOO_LARGE)
            return version, code, fields, bytes(body)
        out = bytearray()
        while size := chunk_size(await reader.readuntil(b"\r\n"), len(out)):
            out += await reader.readexactly(size)
            if await reader.readexactly(2) != b"\r\n":
                raise Malformed(CHUNKS_MALFORMED)
        while (line := await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers, to the empty line
            budget -= len(line)
            if budget < 0:
                raise Malformed(f"the answer's head is larger than {MAX_HEAD_BYTES >> 10} KiB")
        return version, code, fields, bytes(out)
    except asyncio.LimitOverrunError as e:  # (a line longer than the reader's limit)
        raise Malformed("a line of the answer is longer than this client reads") from e


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
        kind, length = framing(fields)
        if kind == "chunked":
            return self._chunks()
        if kind == "length":
            return self.take(length)
        while not self.closed:  # (framed by the connection's end)
            if len(self.buf) > MAX_BODY_BYTES:
                raise Malformed(TOO_LARGE)
            self._more()
        return bytes(self.buf)

    def _chunks(self) -> bytes:
        out = bytearray()
        while True:
            size = chunk_size(self.until(b"\r\n", 1024, CHUNKS_MALFORMED), len(out))
            if size == 0:
                return bytes(out)  # (trailers, if any, are left unread: the connection closes)
            out += self.take(size)
            if self.take(2) != b"\r\n":
                raise Malformed(CHUNKS_MALFORMED)
