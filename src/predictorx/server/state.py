"""What every route shares: the database, the hub, and a write transaction that announces its
events only after it committed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.orm import Session

from ..service.events import take
from ..store.db import Database
from .hub import CHANNEL, Hub


_NOTIFY = text("SELECT pg_notify(:c, :p)")
NOTIFY_LIMIT = 7900  # PostgreSQL refuses NOTIFY payloads of 8000 bytes or more


def _notify_payloads(events: list[dict]) -> list[str]:
    """As few NOTIFYs as fit: one JSON list per payload (one statement per event was the cost)."""
    payloads, batch, size = [], [], 2
    for e in events:
        text_ = json.dumps(e)
        if batch and size + len(text_) + 1 > NOTIFY_LIMIT:
            payloads.append("[" + ",".join(batch) + "]")
            batch, size = [], 2
        batch.append(text_)
        size += len(text_) + 1
    if batch:
        payloads.append("[" + ",".join(batch) + "]")
    return payloads


class AppState:
    def __init__(self, db: Database, hub: Hub):
        self.db = db
        self.hub = hub
        self.postgres = db.engine.dialect.name == "postgresql"

    def read(self):  # noqa: ANN201
        return self.db.read()

    @contextmanager
    def write(self) -> Iterator[Session]:
        events: list[dict] = []
        with self.db.write() as session:
            yield session
            session.flush()
            events = take(session)
            if self.postgres:  # NOTIFY is delivered on commit, to every server process
                for payload in _notify_payloads(events):
                    session.execute(_NOTIFY, {"c": CHANNEL, "p": payload})
        if events and not self.postgres:
            self.hub.publish(events)
