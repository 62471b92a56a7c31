"""The daemon's side of a run's network allowlist: an HTTP proxy on a Unix socket (issue 29).

A run with `network: allowlist` has no network of its own but loopback; the one way out is this
socket, bind-mounted into its sandbox, where the relay inside (netrelay.py) hands every
connection. The proxy speaks two requests:

- `CONNECT host:port` (HTTPS, and every tunnel the relay opens for an allowed loopback port);
- an absolute-form request `GET http://host[:port]/path` (plain HTTP; one request per connection).

A host:port not on the list is answered `403` with a sentence at once — before anything is
resolved — and the run's messages say which host was refused and how its owner can allow it. An
allowed name is resolved here, on the daemon's side (or pinned to an address by the daemon's
PREDICTORX_NET_RESOLVE). Every connection has time limits (the
request head, the connect, silence in both directions) and a run holds at most
`max_connections` at once.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

from ..allowhosts import BadEntry, Entry, allowed, normalise_host, split_host_port

log = logging.getLogger(__name__)

HEAD_LIMIT = 16 * 1024
CHUNK = 64 * 1024
#: Refusals told in the run's messages, each host once; an agent looping on one is not a flood.
MAX_NOTES = 20
#: Name lookups of every run's proxy: a few threads of their own.
_RESOLVER = ThreadPoolExecutor(max_workers=4, thread_name_prefix="netproxy-resolve")
_DROPPED_HEADERS = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")

Notify = Callable[[str], Awaitable[None]]


class _Refused(Exception):
    def __init__(self, status: str, sentence: str, note: bool = True) -> None:
        super().__init__(sentence)
        self.status, self.sentence, self.note = status, sentence, note


class RunProxy:
    """One run's proxy; `notify(sentence)` puts a line into the run's messages."""

    def __init__(self, entries: list[Entry], *, agent: str, notify: Notify, max_connections: int = 64,
                 head_timeout: float = 10.0, connect_timeout: float = 10.0, idle_timeout: float = 300.0,
                 pins: dict[str, str] | None = None) -> None:
        self.entries = entries
        #: name → address, looked up before the resolver (the daemon's PREDICTORX_NET_RESOLVE)
        self.pins = pins or {}
        self.agent = agent
        self.notify = notify
        self.max_connections = max_connections
        self.head_timeout, self.connect_timeout, self.idle_timeout = head_timeout, connect_timeout, idle_timeout
        self.open_connections = 0
        self._server: asyncio.AbstractServer | None = None
        self._noted: set[str] = set()
        self._handlers: set[asyncio.Task] = set()

    async def start(self, socket_path: Path) -> None:
        self._server = await asyncio.start_unix_server(self._accept, path=str(socket_path), limit=HEAD_LIMIT)
        socket_path.chmod(0o600)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            if self.open_connections >= self.max_connections:
                await self._refuse(writer, _Refused("503 Service Unavailable", f"network: refused a connection — the "
                                                    f"run already holds {self.max_connections} open (the limit per run)"))
                return
            self.open_connections += 1
            try:
                await self._serve(reader, writer)
            finally:
                self.open_connections -= 1
        except (asyncio.CancelledError, ConnectionError, OSError):
            pass
        finally:
            writer.close()
            if task is not None:
                self._handlers.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.head_timeout)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            await self._refuse(writer, _Refused("400 Bad Request", "network: a connection sent no proxy request in "
                                                f"{self.head_timeout:g} s (or a head over {HEAD_LIMIT} bytes)", False))
            return
        try:
            method, host, port, forward = self._target(head)
            if not allowed(self.entries, host, port):
                shown = _shown(host, port)
                raise _Refused("403 Forbidden", f"network: refused {shown} — not on agent {self.agent}'s allowlist; "
                                                f"its owner can add it: predictorx agent update {self.agent} "
                                                f"--network allowlist --allow-host {shown} (with the others)")
            upstream_reader, upstream = await self._connect(host, port)
        except _Refused as refused:
            await self._refuse(writer, refused)
            return
        try:
            if method == b"CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.write(forward)
            await _pipe(reader, writer, upstream_reader, upstream, self.idle_timeout)
        finally:
            upstream.close()

    def _target(self, head: bytes) -> tuple[bytes, str, int, bytes]:
        """(method, host, port, the head to send upstream for plain HTTP) of a request head."""
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
            raise _Refused("400 Bad Request", "network: refused a request that is not HTTP", False)
        method, target, version = parts
        text = target.decode("ascii", "replace")
        try:
            if method == b"CONNECT":
                host, port = split_host_port(text, default_port=None)
                return method, host, port, b""
            url = urlsplit(text)
            if url.scheme != "http" or not url.hostname:
                raise BadEntry(text)
            host, port = url.hostname, url.port or 80
        except (BadEntry, ValueError):
            raise _Refused("400 Bad Request", f"network: refused a proxy request for {text[:200]!r} (not "
                                              "CONNECT host:port nor an http:// URL)", False) from None
        origin = (url.path or "/") + (f"?{url.query}" if url.query else "")
        kept = [line for line in lines[1:] if line and line.split(b":", 1)[0].strip().lower() not in _DROPPED_HEADERS]
        forward = b"\r\n".join([b" ".join([method, origin.encode(), version]), *kept, b"Connection: close", b"", b""])
        return method, host, port, forward

    async def _connect(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.wait_for(_open(self.pins.get(normalise_host(host), host), port), self.connect_timeout)
        except asyncio.TimeoutError:
            why = f"no answer in {self.connect_timeout:g} s"
        except OSError as e:
            why = e.strerror or str(e)
        raise _Refused("502 Bad Gateway", f"network: could not reach {host}:{port} ({why})")

    async def _refuse(self, writer: asyncio.StreamWriter, refused: _Refused) -> None:
        body = f"Predictor X: {refused.sentence}\n".encode()
        writer.write(f"HTTP/1.1 {refused.status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        try:
            await asyncio.wait_for(writer.drain(), 5)
        except (asyncio.TimeoutError, ConnectionError, OSError):
            pass
        if refused.note and refused.sentence not in self._noted and len(self._noted) < MAX_NOTES:
            self._noted.add(refused.sentence)
            log.info("agent %s: %s", self.agent, refused.sentence)
            await self.notify(refused.sentence)


def _shown(host: str, port: int) -> str:
    """The host as the run's messages show it: the agent chose it, so short and plain."""
    plain = re.sub(r"[^A-Za-z0-9.:_*\[\]-]", "?", host)[:100]
    return f"[{plain}]:{port}" if ":" in plain else f"{plain}:{port}"


async def _open(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Resolve on the proxy's own few threads (a run asking for slow names cannot take the
    daemon's shared executor), then connect to each address in turn."""
    try:  # an address needs no lookup (nor a thread)
        address = ipaddress.ip_address(host)
        return await asyncio.open_connection(str(address), port, limit=CHUNK)
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    addresses = await loop.run_in_executor(_RESOLVER, functools.partial(
        socket.getaddrinfo, host, port, type=socket.SOCK_STREAM))
    error: OSError = OSError(f"{host} has no address")
    for family, _, _, _, address in addresses:
        try:
            return await asyncio.open_connection(address[0], address[1], family=family, limit=CHUNK)
        except OSError as e:
            error = e
    raise error


async def _pipe(client_reader: asyncio.StreamReader, client: asyncio.StreamWriter,
                upstream_reader: asyncio.StreamReader, upstream: asyncio.StreamWriter, idle_timeout: float) -> None:
    """Bytes both ways until both ends are done, or nothing moved either way for `idle_timeout`."""
    last = [time.monotonic()]

    async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        while True:
            try:
                data = await asyncio.wait_for(src.read(CHUNK), min(idle_timeout, 30.0))
            except asyncio.TimeoutError:
                if time.monotonic() - last[0] >= idle_timeout:
                    raise
                continue
            if not data:
                if dst.can_write_eof():
                    dst.write_eof()
                return
            last[0] = time.monotonic()
            dst.write(data)
            await dst.drain()

    both = [asyncio.ensure_future(copy(client_reader, upstream)), asyncio.ensure_future(copy(upstream_reader, client))]
    try:
        done, _ = await asyncio.wait(both, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()
    except (asyncio.TimeoutError, ConnectionError, OSError):
        pass
    finally:
        for task in both:
            task.cancel()
        await asyncio.gather(*both, return_exceptions=True)
