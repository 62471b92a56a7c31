"""A workspace's model prices are read once per server process, not once per message batch
(service/price_cache.py, issue 30), and a price change is used by the next report: in the process
that made it at once, in another server process on PostgreSQL as soon as the notice arrives."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import event
from starlette.testclient import TestClient

from predictorx.server.app import create_app
from predictorx.server.hub import PRICES_CHANGED
from predictorx.service import price_cache
from predictorx.store.db import Database

from tests.api.test_usage_api import _daemon, _run, _upload

LOCAL = {"model": "my-local-llama", "input_tokens": 2_000_000, "output_tokens": 1_000_000}


def _price(client, headers, input_: float) -> None:
    r = client.put("/api/usage/prices", headers=headers, json={"model": LOCAL["model"], "input": input_, "output": 0.2})
    assert r.status_code == 200, r.text


def _price_reads(app) -> list[str]:
    """Every statement that reads model_price, as the app's engine runs them."""
    seen: list[str] = []

    def before(_conn, _cursor, statement, *_args):
        if "model_price" in statement and statement.lstrip().upper().startswith("SELECT"):
            seen.append(statement)

    event.listen(app.state.px.db.engine, "before_cursor_execute", before)
    return seen


def test_batches_of_a_run_read_the_prices_once(api, app, listening):
    daemon = _daemon(api)
    task = _run(api, daemon)
    reads = _price_reads(app)
    for seq in range(4):
        _upload(daemon, task, seq, {**LOCAL, "output_tokens": LOCAL["output_tokens"] + seq})
    assert len(reads) <= 1, reads
    assert api.get(f"/api/usage/runs/{task}").json()["cost_source"] == "unknown"


def test_a_price_change_prices_the_next_report(api):
    headers = {"Authorization": f"Bearer {api.token}"}
    daemon = _daemon(api)
    task = _run(api, daemon)
    _upload(daemon, task, 0, LOCAL)  # read (no price) and kept
    _price(api.client, headers, 0.1)
    _upload(daemon, task, 1, {**LOCAL, "output_tokens": 1_000_001})
    assert api.get(f"/api/usage/runs/{task}").json()["cost_usd"] == pytest.approx(0.4)
    _price(api.client, headers, 1.0)
    _upload(daemon, task, 2, {**LOCAL, "output_tokens": 1_000_002})
    assert api.get(f"/api/usage/runs/{task}").json()["cost_usd"] == pytest.approx(2.2)
    assert api.delete("/api/usage/prices", params={"model": LOCAL["model"]}).status_code == 200
    _upload(daemon, task, 3, {**LOCAL, "output_tokens": 1_000_003})
    assert api.get(f"/api/usage/runs/{task}").json()["cost_source"] == "unknown"


def test_a_read_that_raced_a_price_change_keeps_nothing():
    class Racing:  # a read during which a price change commits
        def execute(self, _statement):
            price_cache.forget()
            return []

    assert price_cache.prices_of(Racing(), "ws-raced") == {}  # type: ignore[arg-type]
    assert "ws-raced" not in price_cache._kept


def test_another_server_process_is_told_on_postgres(api, app, database_url):
    """Two server processes on one PostgreSQL (two apps, each with its own LISTEN): a price set
    through one reaches the other as a notice, whose handler is the cache's forget."""
    if not database_url.startswith("postgresql"):
        pytest.skip("one SQLite database is one server process")
    other_db = Database(database_url)
    other = create_app(other_db, migrate=False, web=False)
    # (another process's notice only: a process forgets as it commits, and skips its own notice)
    assert (price_cache.forget, True) in other.state.px.hub._notices[PRICES_CHANGED]
    listening, told = threading.Event(), threading.Event()  # LISTEN (re)starting calls every handler
    other.state.px.hub.on_notice("test-listening", listening.set)
    try:
        with TestClient(other):
            assert listening.wait(30), "the other process never started to LISTEN"
            other.state.px.hub.on_notice(PRICES_CHANGED, told.set)
            _price(api.client, {"Authorization": f"Bearer {api.token}"}, 0.1)
            assert told.wait(10), "the other process was not told that a price changed"
    finally:
        other_db.dispose()
