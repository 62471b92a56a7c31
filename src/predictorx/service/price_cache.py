"""A workspace's own model prices, kept in memory between a run's usage reports (issue 30).

Every message batch of a run carries its usage, and pricing it read the workspace's price of the
model each time (~14 % of a busy server's samples). Now each server process keeps what it read,
per workspace (all its prices at once: most workspaces have none), and forgets it:

- in the process that changed a price, as the change commits (server/state.py's write sees the
  table among what the transaction wrote, as it does for principals);
- on PostgreSQL, in every other server process: the change's transaction sends a
  `prices_changed` notice with its NOTIFY (server/state.py), whose handler calls `forget`; a
  process whose LISTEN connection dropped forgets when it listens again (server/hub.py);
- `TTL_SECONDS` after it was read, whatever happens: the bound if a notice is ever lost.

A read that began before a `forget` does not store what it read (a generation count, as in
server/principals.py), so a price change that commits during a read cannot be undone by it.
"""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.usage_schema import ModelPrice

TTL_SECONDS = 60.0
MAX_WORKSPACES = 10_000


class Price(NamedTuple):
    """A ModelPrice's figures, detached from any session (millionths of a dollar per million tokens)."""

    input_micros: int
    output_micros: int
    cache_read_micros: int | None
    cache_write_micros: int | None


_lock = threading.Lock()
_generation = 0
_kept: dict[str, tuple[float, dict[str, Price]]] = {}


def prices_of(session: Session, workspace_id: str) -> dict[str, Price]:
    """The workspace's own prices by model, read once per `TTL_SECONDS` unless one changes."""
    hit = _kept.get(workspace_id)
    if hit is not None and hit[0] > time.monotonic():
        return hit[1]
    generation = _generation
    rows = session.execute(select(ModelPrice.model, ModelPrice.input_micros, ModelPrice.output_micros,
                                  ModelPrice.cache_read_micros, ModelPrice.cache_write_micros)
                           .where(ModelPrice.workspace_id == workspace_id))
    prices = {row.model: Price(row.input_micros, row.output_micros, row.cache_read_micros, row.cache_write_micros)
              for row in rows}
    with _lock:
        if generation == _generation:
            if len(_kept) >= MAX_WORKSPACES:
                _kept.clear()
            _kept[workspace_id] = (time.monotonic() + TTL_SECONDS, prices)
    return prices


def forget() -> None:
    """A price changed (here or in another server process): read them all again."""
    global _generation
    with _lock:
        _generation += 1
        _kept.clear()


def changes_prices(written: set[tuple[str, str]]) -> bool:
    """Whether a transaction that wrote these (operation, table) pairs changed a price."""
    return any(table == ModelPrice.__tablename__ for _op, table in written)
