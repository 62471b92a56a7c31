"""An HTTP/1 response's head, read the one way the three hand-written clients need it: the CLI's
(apiclient.py, a blocking socket, for its start time) and the daemon's (daemon/plainhttp.py and
daemon/smartpush.py, asyncio streams, for their CPU per call). Imports nothing at its start, so
the CLI's start does not pay for it."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio


def parse_head(head: bytes) -> tuple[str, int, dict[str, str]] | None:
    """(HTTP version, status, header fields lower-cased) of a response head without its blank
    line, or None when it is not an HTTP/1 status line."""
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        return None
    fields = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
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
