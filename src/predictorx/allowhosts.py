"""An agent's network allowlist: the grammar of its entries, and whether a host:port is on it.

Pure (no I/O): the server validates entries with it when an agent is saved, the daemon's proxy
matches every connection against it (daemon/netproxy.py). An entry is `HOST[:PORT]`:

- HOST a DNS name (`api.anthropic.com`), a name with one leading wildcard label
  (`*.githubusercontent.com`: its subdomains, not the name itself), an IPv4 address or an IPv6
  address in brackets (`[::1]:8080`);
- PORT 1–65535; without it 443 (HTTPS: model APIs, forges, registries). Plain HTTP needs `:80`.

Matching is literal: a name on the list matches only that name (never an address it resolves
to), an address only that address. Names are compared lower-case without a trailing dot.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

#: What a daemon that applies allowlists declares at registration: a task of an allowlist agent
#: is never handed to a daemon without it (an older one would run it on the open network).
DAEMON_CAPABILITY = "network-allowlist-v1"
DEFAULT_PORT = 443
MAX_ENTRIES = 64
MODES = ("open", "allowlist")
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


class BadEntry(ValueError):
    """An allowlist entry that is not `HOST[:PORT]`; the message is a sentence for the person."""


@dataclass(frozen=True)
class Entry:
    host: str            # lower-case name, `*.suffix`, or an address (IPv6 without brackets)
    port: int

    @property
    def wildcard(self) -> bool:
        return self.host.startswith("*.")

    @property
    def address(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None

    @property
    def loopback(self) -> bool:
        """On the machine itself: the sandbox gets a listener on this port of its own loopback."""
        a = self.address
        return self.host == "localhost" or (a is not None and a.is_loopback)

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def matches(self, host: str, port: int) -> bool:
        if port != self.port:
            return False
        if self.wildcard:
            return host.endswith(self.host[1:]) and _is_name(host)
        if self.address is not None:
            try:
                return ipaddress.ip_address(host) == self.address
            except ValueError:
                return False
        return host == self.host


def _is_name(host: str) -> bool:
    labels = host.split(".")
    return (len(host) <= 253 and all(_LABEL.match(label) for label in labels)
            and not labels[-1].isdigit())  # `127.1` or `2130706433` are addresses in disguise


def normalise_host(host: str) -> str:
    """How a request's host is compared: lower-case, no trailing dot, IPv6 without brackets."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host[:-1] if host.endswith(".") and not host.endswith("..") else host


def split_host_port(text: str, default_port: int | None = DEFAULT_PORT) -> tuple[str, int]:
    """`host`, `host:port`, `[v6]:port` → (host, port). Raises BadEntry."""
    text = text.strip()
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise BadEntry(f"{text!r}: an IPv6 address needs its closing bracket, e.g. [::1]:8080")
        host, rest = text[1:close], text[close + 1:]
        if rest and not rest.startswith(":"):
            raise BadEntry(f"{text!r}: expected [ADDRESS]:PORT")
        port_text = rest[1:] if rest else None
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" in text:
        raise BadEntry(f"{text!r}: write an IPv6 address in brackets, e.g. [::1]:8080")
    else:
        host, port_text = text, None
    if port_text is None:
        if default_port is None:
            raise BadEntry(f"{text!r}: a port is needed")
        return host, default_port
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise BadEntry(f"{text!r}: the port must be a number from 1 to 65535")
    return host, int(port_text)


def parse_entry(text: str) -> Entry:
    """One entry as the owner typed it → Entry. Raises BadEntry with a sentence."""
    if not isinstance(text, str) or not text.strip():
        raise BadEntry("an allowed host cannot be empty; write HOST or HOST:PORT, e.g. api.anthropic.com")
    if len(text) > 300:
        raise BadEntry("an allowed host is at most 300 characters")
    raw_host, port = split_host_port(text)
    host = normalise_host(raw_host)
    try:
        return Entry(str(ipaddress.ip_address(host)), port)
    except ValueError:
        pass
    name = host[2:] if host.startswith("*.") else host
    if not _is_name(name) or (host.startswith("*.") and "." not in name):
        raise BadEntry(f"{text!r} is not a host name, an IPv4 address or a bracketed IPv6 address "
                       "(a wildcard is one leading label: *.example.com)")
    return Entry(host, port)


def parse_list(entries: list[str]) -> list[Entry]:
    """The whole list, de-duplicated in order. Raises BadEntry."""
    if len(entries) > MAX_ENTRIES:
        raise BadEntry(f"an allowlist holds at most {MAX_ENTRIES} hosts")
    return list(dict.fromkeys(parse_entry(e) for e in entries))


def allowed(entries: list[Entry], host: str, port: int) -> bool:
    host = normalise_host(host)
    return any(e.matches(host, port) for e in entries)
