"""Heartbeats as often as the server needs them (issue 30): the server asks for a third of its
daemon timeout when a daemon registers, and the daemon heartbeats at that interval unless
PREDICTORX_HEARTBEAT_INTERVAL says otherwise. Each heartbeat is a write on the server: every 5 s
against a 30 s timeout was most of an idle server's cost."""

from __future__ import annotations

import asyncio
import uuid

from starlette.testclient import TestClient

from predictorx.daemon.main import DEFAULT_HEARTBEAT_S, Daemon
from predictorx.daemon.serverapi import ServerApi
from predictorx.server.app import create_app
from predictorx.server.run import bootstrap


def _registered(db, monkeypatch, timeout_s: str) -> dict:
    monkeypatch.setenv("PREDICTORX_DAEMON_TIMEOUT", timeout_s)
    token = bootstrap(db, "http://testserver")
    with TestClient(create_app(db, migrate=False, web=False)) as client:
        r = client.post("/api/daemon/register", headers={"Authorization": f"Bearer {token}"},
                        json={"daemon_id": str(uuid.uuid4()), "name": "host", "runtimes": []})
    assert r.status_code == 200, r.text
    return r.json()


def _daemon() -> Daemon:
    async def make() -> Daemon:  # (its events belong to a loop)
        return Daemon(ServerApi("http://127.0.0.1:9", None), name="host")
    return asyncio.run(make())


def test_the_server_asks_for_a_third_of_its_timeout_and_the_daemon_keeps_to_it(db, monkeypatch):
    monkeypatch.delenv("PREDICTORX_HEARTBEAT_INTERVAL", raising=False)
    answer = _registered(db, monkeypatch, "30")
    assert answer["heartbeat_interval_s"] == 10.0
    daemon = _daemon()
    assert daemon.heartbeat_interval == DEFAULT_HEARTBEAT_S  # before it registered
    daemon._heartbeat_as_asked(answer["heartbeat_interval_s"])
    assert daemon.heartbeat_interval == 10.0
    daemon._heartbeat_as_asked(None)  # an older server asks nothing: as it was
    assert daemon.heartbeat_interval == 10.0
    daemon._heartbeat_as_asked(10_000)  # bounded
    assert daemon.heartbeat_interval == 60.0


def test_the_environment_overrides_what_the_server_asks(db, monkeypatch):
    monkeypatch.setenv("PREDICTORX_HEARTBEAT_INTERVAL", "0.5")
    daemon = _daemon()
    daemon._heartbeat_as_asked(_registered(db, monkeypatch, "3")["heartbeat_interval_s"])
    assert daemon.heartbeat_interval == 0.5
