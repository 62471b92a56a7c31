"""An agent's network policy applied to one run (R-SEC-9, issue 29; docs/security-sandbox.md).

`network: open` changes nothing: the sandbox shares the machine's network. `network: allowlist`
gives the run a network namespace of its own (bwrap `--unshare-net`: loopback only, no route out,
no resolver), whose only way out is the daemon's proxy (netproxy.py) on a Unix socket mounted
into the sandbox, reached through a relay inside (netrelay.py). The list is the agent's
`allow_hosts` plus the daemon's server URLs (the agent's `predictorx` commands and MCP tools talk
to the server). Inside, /etc/hosts names only localhost, so no other name resolves.

An allowlist is part of the sandbox: a run of an agent with one that would not be sandboxed is
refused, never run on the open network.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterable
from urllib.parse import urlsplit

from ..allowhosts import BadEntry, Entry, normalise_host, parse_entry, parse_list
from .netproxy import Notify, RunProxy

RELAY = Path(__file__).with_name("netrelay.py")
#: Where the proxy's socket appears inside the sandbox (its /run is empty but for this).
INSIDE_SOCKET = "/run/predictorx-net.sock"
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"


def wants_allowlist(network: str) -> bool:
    return network == "allowlist"


def unsandboxed_refusal(agent_name: str, network: str, sandboxed: bool) -> str | None:
    """Why a run cannot start: its allowlist needs the sandbox and the run would have none."""
    if wants_allowlist(network) and not sandboxed:
        return (f"agent {agent_name} has a network allowlist, which needs the sandbox (the allowlist is the "
                "sandbox's own network namespace), and its sandbox is off; not run on the open network — turn its "
                "sandbox on, or set --network open")
    return None


def server_entries(urls: list[str]) -> list[Entry]:
    """The daemon's server URLs as allowlist entries (what `predictorx` inside the run talks to)."""
    found = []
    for url in urls:
        parts = urlsplit(url)
        if not parts.hostname:
            continue
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        try:
            found.append(parse_entry(f"{host}:{port}"))
        except BadEntry:
            continue
    return found


@dataclass
class NetworkJail:
    """One run's namespace and proxy: `bwrap_args` and `wrap` go on its command line."""

    entries: list[Entry]
    folder: Path
    proxy: RunProxy

    @property
    def socket_path(self) -> Path:
        return self.folder / "proxy.sock"

    def bwrap_args(self) -> list[str]:
        return ["--unshare-net", "--bind", str(self.socket_path), INSIDE_SOCKET,
                "--ro-bind", str(self.folder / "hosts"), "/etc/hosts"]

    def wrap(self, argv: list[str]) -> list[str]:
        directs = [f"--direct={e}" for e in self.entries if e.loopback]
        return [sys.executable, "-I", "-S", str(RELAY), f"--socket={INSIDE_SOCKET}", *directs, "--", *argv]

    async def close(self) -> None:
        await self.proxy.close()
        shutil.rmtree(self.folder, ignore_errors=True)


#: `name=address,…` in the daemon's environment: where its proxies connect for an allowed name,
#: instead of asking the resolver (as curl's --resolve; a forge on a private address, a test's name).
RESOLVE_ENV = "PREDICTORX_NET_RESOLVE"


def pins_from(value: str) -> dict[str, str]:
    pins = {}
    for pair in value.replace(" ", ",").split(","):
        name, sep, address = pair.partition("=")
        if sep and name.strip() and address.strip():
            pins[normalise_host(name)] = address.strip().strip("[]")
    return pins


async def open_jail(agent_name: str, allow_hosts: Iterable[str], server_urls: list[str], notify: Notify,
                    **limits: float) -> NetworkJail:
    """Start the proxy of one allowlist run. The socket lives in a fresh 0700 folder under the
    temporary directory: a Unix socket's path must be short, and the env root's may not be."""
    entries = list(dict.fromkeys(parse_list(list(allow_hosts)) + server_entries(server_urls)))
    folder = Path(tempfile.mkdtemp(prefix="px-net-"))
    try:
        (folder / "hosts").write_text(HOSTS)
        proxy = RunProxy(entries, agent=agent_name, notify=notify,  # type: ignore[arg-type]
                         pins=pins_from(os.environ.get(RESOLVE_ENV, "")), **limits)
        await proxy.start(folder / "proxy.sock")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return NetworkJail(entries, folder, proxy)


async def close(jail: NetworkJail | None) -> None:
    if jail is not None:
        await jail.close()
