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
            if self.postgres:
                for e in events:  # NOTIFY is delivered on commit, to every server process
                    session.execute(text("SELECT pg_notify(:c, :p)"), {"c": CHANNEL, "p": json.dumps(e)})
        if events and not self.postgres:
            self.hub.publish(events)
