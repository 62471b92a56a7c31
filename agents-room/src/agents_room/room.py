"""The room: every operation agents-room offers, over one SQLite connection.

The MCP server, the hooks and the CLI are thin shells over :class:`Room`, a facade whose methods
live in one module per concept:

* :mod:`.sessions` — join, leave, end, who (sessions and presence)
* :mod:`.messaging` — addressing, send, receive, unread, sent, history
* :mod:`.threads` — threads and acknowledgements
* :mod:`.search` — full-text search (FTS5)
* :mod:`.delivery` — the pending check, the nudge, the Stop guard and the wake waiter
* :mod:`.leases` — file and glob leases
* :mod:`.divergence` — read hashes and who changed a file since
* :mod:`.maintenance` — doctor and prune
* :mod:`.queries` — what they share (constants, errors, the common queries)

Every read-check-write runs in one ``BEGIN IMMEDIATE`` transaction (R-ROOM-1).
"""

from __future__ import annotations

import time

from .delivery import Delivery, Offer
from .divergence import Divergence
from .leases import Leases
from .maintenance import Maintenance
from .messaging import Messaging
from .queries import (  # noqa: F401 -- the public names, importable from agents_room.room
    AUTO_PRUNE_EVERY,
    AUTONOMY_NAMES,
    CODEX_HOLD_CAP,
    CODEX_HOLD_WINDOW,
    DEFAULT_LEASE_TTL,
    EVENTS_PRUNE_AFTER,
    GONE_PRUNE_AFTER,
    HOLD,
    MAX_LEASE_TTL,
    NOTIFY,
    RETRY_WINDOW,
    STALE_OFFER_AFTER,
    STOP_GUARD_TTL,
    SYSTEM_SENDER,
    WAKE,
    RoomError,
    file_hash,
    parse_autonomy,
)
from .search import Search
from .sessions import Sessions
from .threads import Threads
from .store import connect

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Callable

__all__ = ["Room", "RoomError", "Offer", "NOTIFY", "HOLD", "WAKE", "RETRY_WINDOW", "parse_autonomy"]


class Room(Sessions, Messaging, Threads, Search, Delivery, Leases, Divergence, Maintenance):
    """One entry point over one connection; each concept's methods come from its module."""

    @classmethod
    def open(cls, path: Path | str | None = None, clock: Callable[[], float] = time.time) -> "Room":
        return cls(connect(path), clock)

    def close(self) -> None:
        self.conn.close()
