"""A pooled PostgreSQL connection is checked without a round trip (store/db.py, issue 14): a
healthy one is handed out as it is, one the server ended is replaced before a request uses it."""

from __future__ import annotations

import time

import psycopg
import pytest
from sqlalchemy import text

from databases import POSTGRES_URL


@pytest.fixture
def pg(db):
    if db.engine.dialect.name != "postgresql":
        pytest.skip("the pool check is PostgreSQL's; SQLite has no server to lose")
    return db


def _backend_pid(db) -> int:
    with db.write() as s:
        return s.execute(text("SELECT pg_backend_pid()")).scalar_one()


def test_a_healthy_pooled_connection_costs_no_round_trip(pg, monkeypatch):
    pings: list[object] = []
    monkeypatch.setattr(pg.engine.dialect, "do_ping", lambda conn: pings.append(conn) or True)
    first = _backend_pid(pg)
    for _ in range(5):
        assert _backend_pid(pg) == first  # the same pooled connection, reused
    assert pings == []  # no `SELECT 1` before each use (pool_pre_ping did one per checkout)


def test_a_connection_the_server_ended_is_replaced_before_use(pg):
    victim = _backend_pid(pg)
    with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=10) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (victim,)).fetchone()[0]
        deadline = time.monotonic() + 10
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (victim,)).fetchone()[0]:
            assert time.monotonic() < deadline, "the backend did not end"
            time.sleep(0.02)
    # The request after it runs on a new connection, without an error.
    assert _backend_pid(pg) != victim
