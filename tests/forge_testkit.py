"""A small test-only forge, registered through `forges.registry.register` as a plugin's entry point
would register one: the forge-core tests need a kind before the built-in clients exist, and a
forge whose answers they choose (a token it accepts, one it refuses, one it cannot be reached with).

It answers `whoami` only; the other calls are the forge-clients' business and their stand-ins'.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from predictorx.forges import registry
from predictorx.forges.base import Connection, ForgeRefused, ForgeUnavailable, RepoRef

KIND = "testforge"
GOOD_TOKEN = "tf-good-token-7Q9z"
#: A token the forge refuses, with the sentence it gives.
REFUSED_TOKEN = "tf-refused-token-X1y2"
REFUSAL = "Bad credentials (the token was revoked)"
#: A token that makes the forge unreachable (as a timeout would).
DOWN_TOKEN = "tf-down-token-Z3w4"
#: A token that makes the client itself break (a bug, not the forge's answer).
CRASH_TOKEN = "tf-crash-token-V5u6"


class KitForge:
    kind = KIND
    webhook_auth = "X-Test-Signature"
    calls: list[Connection] = []

    def default_api_url(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/api/v9"

    def repo_from_url(self, base_url: str, url: str) -> RepoRef | None:
        if "://" in url:
            path = urlsplit(url).path
        elif "@" in url.split(":", 1)[0]:
            path = url.split(":", 1)[1]
        else:
            return None
        prefix = urlsplit(base_url).path.strip("/")
        path = path.strip("/")
        if url.startswith(("http://", "https://")) and prefix:
            if not path.startswith(prefix + "/"):
                return None
            path = path[len(prefix) + 1:]
        path = path.removesuffix(".git")
        return RepoRef(path) if path.count("/") >= 1 else None

    def whoami(self, conn: Connection) -> str:
        type(self).calls.append(conn)
        if conn.token == REFUSED_TOKEN:
            raise ForgeRefused(REFUSAL, 401)
        if conn.token == DOWN_TOKEN:
            raise ForgeUnavailable("connection refused by 127.0.0.1:9 (nothing listens there)")
        if conn.token == CRASH_TOKEN:
            raise RuntimeError(f"client bug while sending Authorization: token {conn.token}")
        if conn.token != GOOD_TOKEN:
            raise ForgeRefused("Unknown token", 401)
        return "octo-bot"


@contextmanager
def registered_kit_forge() -> Iterator[type[KitForge]]:
    registry.register(KitForge)
    KitForge.calls = []
    try:
        yield KitForge
    finally:
        registry.FORGES.unregister(KIND)
