from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from predictorx.server.app import create_app
from predictorx.server.run import bootstrap


class Api:
    """A TestClient that carries the owner's token; `.as_(token)` for another principal."""

    def __init__(self, client: TestClient, token: str):
        self.client = client
        self.token = token

    def _h(self, headers):
        return {"Authorization": f"Bearer {self.token}", **(headers or {})}

    def get(self, url, **kw):
        return self.client.get(url, headers=self._h(kw.pop("headers", None)), **kw)

    def post(self, url, **kw):
        return self.client.post(url, headers=self._h(kw.pop("headers", None)), **kw)

    def patch(self, url, **kw):
        return self.client.patch(url, headers=self._h(kw.pop("headers", None)), **kw)

    def put(self, url, **kw):
        return self.client.put(url, headers=self._h(kw.pop("headers", None)), **kw)

    def delete(self, url, **kw):
        return self.client.delete(url, headers=self._h(kw.pop("headers", None)), **kw)

    def as_(self, token: str) -> "Api":
        return Api(self.client, token)

    def register_daemon(self, provider: str) -> "Api":
        """A new daemon of this caller with one runtime (`provider`), as that daemon's own Api."""
        import uuid

        did = str(uuid.uuid4())
        r = self.post("/api/daemon/register", json={"daemon_id": did, "name": f"host-{did[:4]}",
                                                    "runtimes": [{"provider": provider, "version": "1"}]})
        assert r.status_code == 200, r.text
        return self.as_(r.json()["token"])


@pytest.fixture
def app(db):
    return create_app(db, migrate=False, web=False)


@pytest.fixture
def api(app, db):
    token = bootstrap(db, "http://testserver")
    with TestClient(app) as client:
        yield Api(client, token)


@pytest.fixture
def listening(api, app, database_url) -> None:
    """On PostgreSQL, the app LISTENs before the test goes on: starting to listen empties the
    caches of principals and prices (a notice may have been missed meanwhile), which would race
    a test that counts what is read or kept."""
    if not database_url.startswith("postgresql"):
        return
    import json
    import threading
    import time

    import psycopg

    from predictorx.server.hub import CHANNEL

    up = threading.Event()  # (set by LISTEN starting, or by the ping once it listens)
    app.state.px.hub.on_notice("test-ping", up.set)
    with psycopg.connect(database_url, autocommit=True, connect_timeout=10) as conn:
        started = time.monotonic()
        while not up.wait(0.2):
            assert time.monotonic() - started < 30, "the server never started to LISTEN"
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps([{"type": "test-ping"}])))


@pytest.fixture
def published(monkeypatch) -> list[dict]:
    """Every event the server's transactions publish, in order (as each commits)."""
    import predictorx.server.state as state_module

    events_seen: list[dict] = []
    real_take = state_module.take

    def take(session):
        events = real_take(session)
        events_seen.extend(events)
        return events

    monkeypatch.setattr(state_module, "take", take)
    return events_seen
