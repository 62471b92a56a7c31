"""The server's sweeper costs an idle server no write (issue 30): it looks with a read and opens a
write transaction only when a task is due (a silent daemon's, or one past its prepare lease)."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import timedelta

from sqlalchemy import event

from predictorx.server.app import _sweeper
from predictorx.service import tasks as task_service
from predictorx.store.schema import Daemon, Task, utcnow

_WRITE = re.compile(r"^\s*(BEGIN IMMEDIATE|INSERT|UPDATE|DELETE)\b", re.I)


class _Writes:
    """Write statements the database engine runs (a BEGIN IMMEDIATE is SQLite's write transaction)."""

    def __init__(self, engine):
        self.statements: list[str] = []
        self.engine = engine
        event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, *args):
        if _WRITE.match(statement):
            self.statements.append(statement.split()[0].upper() + " " + statement.split()[1])

    def close(self):
        event.remove(self.engine, "before_cursor_execute", self._seen)


async def _sweeping(state, interval: float, until, timeout: float = 30.0) -> None:
    """Run the sweeper job until `until()` holds (checked on the loop), then stop it."""
    job = asyncio.create_task(_sweeper(state, interval))
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        while not until():
            assert asyncio.get_running_loop().time() < deadline, "the sweeper did not get there"
            await asyncio.sleep(interval)
    finally:
        job.cancel()
        await asyncio.gather(job, return_exceptions=True)


def _daemon_with_a_running_task(api) -> tuple[str, str]:
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": f"host-{did[:4]}",
                                               "runtimes": [{"provider": "claude", "version": "1.0"}]})
    d = api.as_(r.json()["token"])
    api.post("/api/agents", json={"name": "a1", "provider": "claude"})
    api.post("/api/issues", json={"title": "one", "assignee": "a1"})
    tid = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running"})
    return did, tid


def test_the_sweeper_writes_nothing_while_nothing_is_due(api, db, monkeypatch):
    monkeypatch.setenv("PREDICTORX_DAEMON_TIMEOUT", "30")
    did, tid = _daemon_with_a_running_task(api)  # a live daemon with a running task: nothing due
    state = api.client.app.state.px
    sweeps = []
    real_due = task_service.sweep_due
    monkeypatch.setattr(task_service, "sweep_due", lambda s, t: sweeps.append(1) or real_due(s, t))
    writes = _Writes(db.engine)
    try:
        asyncio.run(_sweeping(state, 0.01, lambda: len(sweeps) >= 20))
        assert writes.statements == [], writes.statements

        # Now one is due: the same job writes, and sweeps it.
        with state.write() as s:
            s.get(Daemon, did).last_heartbeat_at = utcnow() - timedelta(minutes=5)
        writes.statements.clear()

        def swept() -> bool:
            with state.read() as s:
                return s.get(Task, tid).status == "failed"
        asyncio.run(_sweeping(state, 0.01, swept))
        assert any(w.startswith("UPDATE") for w in writes.statements), writes.statements
    finally:
        writes.close()


def test_sweep_due_sees_what_sweep_would_sweep(api):
    did, tid = _daemon_with_a_running_task(api)
    state = api.client.app.state.px
    with state.read() as s:
        assert task_service.sweep_due(s, timedelta(seconds=30)) is False
    with state.write() as s:
        s.get(Daemon, did).last_heartbeat_at = utcnow() - timedelta(minutes=5)
    with state.read() as s:
        assert task_service.sweep_due(s, timedelta(seconds=30)) is True
    with state.write() as s:
        assert [t.id for t in task_service.sweep(s, timedelta(seconds=30))] == [tid]
    with state.read() as s:
        assert task_service.sweep_due(s, timedelta(seconds=30)) is False
