"""The price table (genai-prices: its import and snapshot, tens of ms of CPU) is loaded as the
server starts, in a thread of its own — not inside the first task's priced message batch (issue 30)."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient

from predictorx.server.app import create_app
from predictorx.service import pricing


def test_the_server_start_loads_the_price_table_off_the_request_path(db, monkeypatch):
    loaded = threading.Event()
    where: list[str] = []

    def warm() -> None:
        where.append(threading.current_thread().name)
        loaded.set()

    monkeypatch.setattr(pricing, "warm", warm)
    with TestClient(create_app(db, migrate=False, web=False)) as client:
        assert loaded.wait(30), "the server started without loading the price table"
        assert client.get("/api/health").status_code == 200
    assert where == ["px-price-table"]


def test_warming_the_table_makes_the_first_pricing_cheap() -> None:
    pricing.warm()
    assert pricing.table_price({"model": "claude-sonnet-4-5", "input_tokens": 1_000_000, "output_tokens": 0,
                                "cache_read_tokens": 0, "cache_write_tokens": 0}) is not None
