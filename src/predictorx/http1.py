"""An HTTP/1 response's head, read the one way the two hand-written clients need it: the CLI's
(apiclient.py, a blocking socket, for its start time) and the daemon's (daemon/plainhttp.py,
asyncio streams, for its CPU per call). Imports nothing, so the CLI's start does not pay for it."""

from __future__ import annotations


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
