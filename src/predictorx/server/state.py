"""What every route shares: the database, the hub, and a write transaction that announces its
events only after it committed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from ..service import inbox_feed, price_cache
from ..service.events import take
from ..store import direct
from ..store.db import WRITTEN, Database
from .hub import CHANNEL, PRICES_CHANGED, PRINCIPALS_CHANGED, Hub
from .principals import PrincipalCache, changes_principals


# A Core statement, run on the connection: a text() statement's result columns were worked out
# again on every execution (a text clause's result metadata is not cached), on every write.
_NOTIFY = select(func.pg_notify(bindparam("c"), bindparam("p")))
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
        self.principals = PrincipalCache()
        # Another process changed them (this process forgets as it commits: its own notice coming
        # back later would empty what was read since, for nothing).
        hub.on_notice(PRINCIPALS_CHANGED, self.principals.forget, others_only=True)
        hub.on_notice(PRICES_CHANGED, price_cache.forget, others_only=True)

    def read(self):
        return self.db.read()

    @contextmanager
    def write(self) -> Iterator[Session]:
        events: list[dict] = []
        principals_changed = prices_changed = False
        try:
            with self.db.write() as session:
                yield session
                session.flush()
                inbox_feed.derive(session)  # what this transaction puts in people's inboxes, committed with it
                events = take(session)
                written = session.info.get(WRITTEN, set())
                principals_changed = changes_principals(written)
                prices_changed = price_cache.changes_prices(written)
                if self.postgres:  # NOTIFY is delivered on commit, to every server process
                    self._notify(session, events, principals_changed, prices_changed)
        finally:
            # This process at once, before the request is answered — also when the commit failed
            # as far as we know (its answer lost: it may have committed, and this process skips
            # its own notice); forgetting what still holds costs a lookup. The others by the notice.
            if prices_changed:
                price_cache.forget()
            if principals_changed:
                self.principals.forget()
        if principals_changed and not self.postgres:  # (PostgreSQL's NOTIFY reaches the listeners)
            # open streams are checked again (server/streamwatch.py)
            self.hub.publish([{"type": PRINCIPALS_CHANGED, "from": self.hub.origin}])
        if events and not self.postgres:
            self.hub.publish(events)

    def _notify(self, session: Session, events: list[dict], principals_changed: bool, prices_changed: bool) -> None:
        """The transaction's events and notices as NOTIFYs, delivered with its commit."""
        origin = self.hub.origin
        notices = [{"type": PRINCIPALS_CHANGED, "from": origin}] if principals_changed else []
        if prices_changed:
            notices.append({"type": PRICES_CHANGED, "from": origin})
        payloads = _notify_payloads(events + notices)
        if payloads:
            conn = session.connection()
            for payload in payloads:
                direct.rows(conn, _NOTIFY, {"c": CHANNEL, "p": payload})
