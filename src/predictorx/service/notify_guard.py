"""Which addresses outbound notifications may reach. Any member adds a webhook or an Apprise URL and
reads the start of each answer in the delivery log, so without the server's consent
(`PREDICTORX_NOTIFY_ALLOW_PRIVATE=1`) a notification never reaches loopback, private, link-local or
other non-global addresses — it would be a way to read internal services.

Three checks, on both kinds of channel where they apply:

- `private_address(url)`: the addresses the URL's host resolves to now (a webhook before each
  send; an Apprise URL when it is added and before each send — DNS can change in between);
- `named_hosts(url)`: the hosts an Apprise URL names (its host part and the server options such as
  `?smtp=`): an IP literal is classified as it is; a name is resolved, and one that does not
  resolve is let through to the next check (Discord's `discord://<id>/<token>` names no host);
- `connections()`: around Apprise's own send and a webhook's request, every name lookup the send
  makes (whatever host its plugin contacts, named in the URL or not; the webhook's host again, as
  DNS may answer the connection otherwise than the check) is classified before any connection is
  made, and a non-global answer is refused (an OSError to the sender, recorded for the delivery log).
"""

from __future__ import annotations

import contextlib
import contextvars
import ipaddress
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

ALLOW_PRIVATE_ENV = "PREDICTORX_NOTIFY_ALLOW_PRIVATE"
#: Query options of Apprise URLs that name the server contacted (mailto's `smtp`, others' `host`).
SERVER_OPTIONS = ("smtp", "host", "server", "hostname")


def allowed() -> bool:
    return os.environ.get(ALLOW_PRIVATE_ENV) == "1"


def is_private(address: str) -> bool:
    """Not a global unicast address: loopback, private (RFC 1918, unique local), link-local, CGNAT,
    multicast, reserved, unspecified — and IPv4 addresses mapped into IPv6 are read as IPv4."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to (tests override this to name loopback without DNS)."""
    return [str(sockaddr[0]) for *_, sockaddr in _lookup(host, port, proto=socket.IPPROTO_TCP)]


def private_address(url: str) -> str | None:
    """The first address of the URL's host that is not a public one (None: all are public, or
    private ones are allowed on this server). OSError when the host does not resolve."""
    if allowed():
        return None
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return next((a for a in resolve(parts.hostname or "", port) if is_private(a)), None)


def named_hosts(url: str) -> list[str]:
    """The hosts an Apprise URL names: its host part and its server options."""
    try:
        parts = urlsplit(url)
        hosts = [parts.hostname] if parts.hostname else []
    except ValueError:  # (a malformed port or bracket: Apprise refuses the URL anyway)
        return []
    for key, values in parse_qs(parts.query).items():
        if key.lower() in SERVER_OPTIONS:
            for v in values:
                try:
                    hosts.append(urlsplit(v if "://" in v else f"//{v}").hostname or v)
                except ValueError:  # (an unclosed bracket: no host; a channel's URL is checked when added)
                    continue
    return [h for h in hosts if h]


def private_named(url: str) -> str | None:
    """A host the Apprise URL names that is, or resolves to, a non-global address: "host (address)";
    None when there is none or the server allows them."""
    if allowed():
        return None
    for host in named_hosts(url):
        try:
            addresses = [host] if _is_literal(host) else resolve(host, 0)
        except OSError:
            continue  # not a host name (a token, an id): what is contacted is checked at send
        private = next((a for a in addresses if is_private(a)), None)
        if private is not None:
            return host if private == host else f"{host} ({private})"
    return None


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
        return True
    except ValueError:
        return False


class PrivateAddressRefused(OSError):
    """A lookup inside `connections()` answered a non-global address (no connection is made)."""


_refusals: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("px_notify_refusals", default=None)
_lookup = socket.getaddrinfo
_installed = threading.Lock()


def _guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    answers = _lookup(host, port, *args, **kwargs)
    refusals = _refusals.get()
    if refusals is not None:
        for *_, sockaddr in answers:
            if is_private(str(sockaddr[0])):
                refusals.append(f"{host} ({sockaddr[0]})")
                raise PrivateAddressRefused(f"{host} resolves to a private address ({sockaddr[0]}); the server's "
                                            f"{ALLOW_PRIVATE_ENV}=1 allows those")
    return answers


def _install() -> None:
    """Route name lookups through the guard (once per process; outside `connections()` — every other
    thread and task — it only passes the answers on)."""
    with _installed:
        if socket.getaddrinfo is not _guarded_getaddrinfo:
            socket.getaddrinfo = _guarded_getaddrinfo


@contextlib.contextmanager
def connections() -> Iterator[list[str]]:
    """Within: name lookups (in this context and Apprise's workers, which copy it) refuse non-global
    answers unless the server allows them. Yields the list of what was refused."""
    refused: list[str] = []
    if allowed():
        yield refused
        return
    _install()
    token = _refusals.set(refused)
    try:
        yield refused
    finally:
        _refusals.reset(token)
