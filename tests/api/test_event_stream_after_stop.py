"""A server stopped in-process (as its SIGTERM handler does) must not end the event streams of
servers started after it in the same process: sse-starlette keeps the stop in one process-wide
flag, and the suite's browser tests lost their live updates to it (tests/conftest.py resets it).
The two tests run in this order; the second failed before the reset."""

from __future__ import annotations

import signal
import threading
import time

import httpx2
import uvicorn

from predictorx.server.app import create_app
from predictorx.server.run import bootstrap
from predictorx.store.db import Database
from predictorx.testing import free_port


def test_1_a_server_stopped_as_by_sigterm(tmp_path):
    server = uvicorn.Server(uvicorn.Config(lambda *a: None, log_level="warning"))
    server.handle_exit(signal.SIGTERM, None)  # what uvicorn's signal handler calls
    assert server.should_exit


def test_2_a_later_servers_event_stream_stays_open(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'px.db'}")
    db.migrate()
    token = bootstrap(db, "http://testserver")
    port = free_port()
    app = create_app(db, migrate=False)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        headers = {"Authorization": f"Bearer {token}"}
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client, \
                client.stream("GET", "/api/events", headers=headers) as stream:
            assert stream.status_code == 200
            lines = stream.iter_lines()
            assert next(line for line in lines if line.startswith("data:")) == 'data: {"type": "hello"}'
            # A stream ended by the stale flag closes right after its hello; a live one is still
            # open when a change is published a moment later, and carries it.
            hub = app.state.px.hub
            workspace_id = next(iter(hub.subscribers())).workspace_id
            hub.publish([{"type": "task_updated", "workspace_id": workspace_id, "task_id": "t-1"}])
            event = next(line for line in lines if line.startswith("data:"))
            assert '"task_id": "t-1"' in event
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        db.dispose()
