"""Principals by token hash, kept for a moment so a busy daemon's requests do not each look their
token up, and forgotten the moment tokens or memberships change (R-SEC-1, R-SEC-5).

- Keyed by the token's SHA-256 (the raw token is never kept beyond its request); an entry lives
  `ttl` seconds (2 s) at most. Task tokens are never kept: a task token dies with its task.
- Every write transaction that changes a token (revoked, expired, deleted) or a membership (added,
  role changed, removed) empties the cache of the process that made it as it commits
  (`store.db` records which tables a transaction wrote; `AppState.write` looks) and, on
  PostgreSQL, of every other server process: a `principals_changed` notice goes out with the
  transaction's NOTIFY and each other process's listener empties its own (server/hub.py; the
  notice names its sender, whose listener skips it: emptying again what requests read since the
  commit would only cost them a lookup each). A process
  whose LISTEN connection dropped empties it when it listens again (it may have missed one).
- A lookup that began before the cache was emptied does not store what it read (a generation
  count), so a revocation that commits while a request is reading the token cannot be undone by
  that request writing the old principal back.

So a revoked token is refused by the next request to the process that revoked it, and by any
other process as soon as PostgreSQL delivers the notice (milliseconds) — the 2 s lifetime only
bounds the case where that delivery is lost.
"""

from __future__ import annotations

import threading
import time

from ..service import auth

TTL_SECONDS = 2.0
MAX_ENTRIES = 10_000


class PrincipalCache:
    def __init__(self, ttl: float = TTL_SECONDS, max_entries: int = MAX_ENTRIES):
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: dict[str, tuple[float, auth.Principal]] = {}
        self._lock = threading.Lock()
        self.generation = 0

    @staticmethod
    def key(raw: str) -> str:
        return auth.hash_token(raw)

    def get(self, key: str) -> auth.Principal | None:
        hit = self._entries.get(key)
        if hit is None or hit[0] <= time.monotonic():
            return None
        return hit[1]

    def put(self, key: str, principal: auth.Principal, generation: int) -> None:
        """Keep `principal`, read while the cache was at `generation`: not if it was emptied since."""
        if principal.kind == "task":
            return
        with self._lock:
            if generation != self.generation:
                return
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = (time.monotonic() + self.ttl, principal)

    def forget(self) -> None:
        """Tokens or memberships changed: nothing kept is trusted any longer."""
        with self._lock:
            self.generation += 1
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def changes_principals(written: set[tuple[str, str]]) -> bool:
    """Whether a transaction that wrote these (operation, table) pairs may have changed what a
    token stands for: any change to a membership, or a token changed or deleted (new tokens
    change no principal that exists)."""
    return any(table == "member" or (table == "token" and op != "insert") for op, table in written)
