"""Connections that send nothing, or send their headers a byte at a time, are closed (issue 29 §7).

uvicorn closes an idle keep-alive connection after `timeout_keep_alive`, but a connection that
never finishes its request's headers — opened and left silent, or trickling a byte a second —
stayed open for good: 1,100 of them used up the process's 1,024 file descriptors and
`/api/health` stopped answering. `GuardedProtocol` is uvicorn's own HTTP protocol with two limits:

- **Header timeout.** A request's headers must be complete within HEADER_TIMEOUT seconds
  (`PREDICTORX_HEADER_TIMEOUT`, default 10) of the connection opening or the previous answer
  ending; otherwise the connection is closed (with a 408 and a sentence if part of a request had
  arrived). A request being answered — an event stream included — is never cut by it.
- **Connections per client address.** At most PER_CLIENT (`PREDICTORX_MAX_CONNECTIONS_PER_CLIENT`,
  default 512 — an office behind one NAT address shares it; 0 turns it off) open at once from one
  address, per server process; one more is answered 503 with a sentence and closed. Behind a reverse proxy every connection comes from the
  proxy's address: raise it (or set 0) there and let the proxy cap per client (docs/scale.md).

`uvicorn_options()` is what every way of starting the server passes to uvicorn.
"""

from __future__ import annotations

import asyncio
import os

from uvicorn.protocols.http.auto import AutoHTTPProtocol

HEADER_TIMEOUT_ENV = "PREDICTORX_HEADER_TIMEOUT"
PER_CLIENT_ENV = "PREDICTORX_MAX_CONNECTIONS_PER_CLIENT"
#: An idle keep-alive connection is closed after this (uvicorn's default, said out loud).
KEEP_ALIVE_SECONDS = 5
#: The most of a request's start line and headers kept while they arrive (h11's own default).
MAX_HEADER_BYTES = 16 * 1024


def _number(env: str, default: float, low: float, high: float) -> float:
    raw = os.environ.get(env, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise ValueError(f"{env} must be a number, not {raw!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{env} must be between {low:g} and {high:g}, not {value:g}")
    return value


def header_timeout() -> float:
    return _number(HEADER_TIMEOUT_ENV, 10.0, 0.1, 3600.0)


def per_client_limit() -> int:
    return int(_number(PER_CLIENT_ENV, 512, 0, 1_000_000))


def _answer(status: str, sentence: str) -> bytes:
    body = (sentence + "\n").encode()
    return (f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
            f"content-length: {len(body)}\r\n\r\n").encode() + body


class GuardedProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    """uvicorn's HTTP protocol (h11 or httptools, as it chose) with a header timeout and a cap on
    connections per client address. Both keep their state in attributes uvicorn's protocols share:
    `cycle` (the request being answered) and `transport`."""

    #: open connections per client address, in this process (the event loop's thread only)
    open_by_client: dict[str, int] = {}

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._px_client = self.client[0] if self.client else ""
        self._px_timer: asyncio.TimerHandle | None = None
        self._px_heard = False
        count = self.open_by_client.get(self._px_client, 0) + 1
        self.open_by_client[self._px_client] = count
        limit = per_client_limit()
        if limit and count > limit:
            transport.write(_answer("503 Service Unavailable", f"too many connections from your address "
                                    f"(at most {limit} at once); close idle ones and try again"))
            transport.close()
            return
        self._px_arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._px_disarm()
        left = self.open_by_client.get(self._px_client, 1) - 1
        if left > 0:
            self.open_by_client[self._px_client] = left
        else:
            self.open_by_client.pop(self._px_client, None)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._px_heard = True
        super().data_received(data)
        if not self._px_waiting_for_headers():
            self._px_disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._px_arm()  # the next request's headers are bound by the same timeout

    # -- the header timer ---------------------------------------------------------------------
    def _px_waiting_for_headers(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _px_arm(self) -> None:
        self._px_disarm()
        self._px_heard = False
        self._px_timer = self.loop.call_later(header_timeout(), self._px_expired)

    def _px_disarm(self) -> None:
        timer = getattr(self, "_px_timer", None)
        if timer is not None:
            timer.cancel()
            self._px_timer = None

    def _px_expired(self) -> None:
        self._px_timer = None
        if self.transport.is_closing() or not self._px_waiting_for_headers():
            return
        if self._px_heard:  # part of a request came: say why it ends
            self.transport.write(_answer("408 Request Timeout", f"the request's headers did not arrive within "
                                         f"{header_timeout():g} s"))
        self.transport.close()


def uvicorn_options() -> dict:
    """The connection limits for uvicorn.run / uvicorn.Config (checked here, at start)."""
    header_timeout()
    per_client_limit()
    return {"http": GuardedProtocol, "timeout_keep_alive": KEEP_ALIVE_SECONDS,
            "h11_max_incomplete_event_size": MAX_HEADER_BYTES}
