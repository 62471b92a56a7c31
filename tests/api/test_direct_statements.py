"""The hot statements run straight on psycopg (store/direct.py, issue 14): the same rows and types
SQLAlchemy gives, the same exceptions, and the finish-and-claim request really takes that path."""

from __future__ import annotations

from datetime import datetime, timezone
import uuid

import pytest
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, OperationalError

from predictorx.store import direct
from predictorx.store.schema import TASK_ROW_COLUMNS, Workspace

_ws = Workspace.__table__
_ADD = insert(_ws).values(id=bindparam("w_id"), name=bindparam("w_name"), slug=bindparam("w_slug"),
                          repos=bindparam("w_repos"), created_at=bindparam("w_at"))
_RENAME = (update(_ws).where(_ws.c.id == bindparam("w_id")).values(name=bindparam("w_name"))
           .returning(_ws.c.id, _ws.c.name, _ws.c.repos, _ws.c.created_at))
_READ = select(_ws.c.id, _ws.c.repos, _ws.c.created_at).where(_ws.c.id == bindparam("w_id"))


@pytest.fixture
def pg(db):
    if db.engine.dialect.name != "postgresql":
        pytest.skip("the direct path is PostgreSQL's; SQLite keeps SQLAlchemy's")
    return db


def _add(conn: Connection, **over) -> str:
    wid = str(uuid.uuid4())
    params = {"w_id": wid, "w_name": "n", "w_slug": f"s-{wid[:8]}", "w_repos": [{"url": "https://x/y.git"}],
              "w_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc), **over}
    assert direct.rows(conn, _ADD, params) == []  # no RETURNING: no rows
    return wid


def test_rows_and_types_are_sqlalchemys(pg):
    with pg.write() as s:
        conn = s.connection()
        wid = _add(conn)
        got = direct.first(conn, _RENAME, {"w_id": wid, "w_name": "renamed"})
        want = conn.execute(_READ, {"w_id": wid}).one()
    assert (got.id, got.name) == (wid, "renamed") and got[0] == wid
    assert got.repos == want.repos == [{"url": "https://x/y.git"}]  # JSON in and out
    assert got.created_at == want.created_at and got.created_at.tzinfo is not None  # aware, as UTCDateTime gives
    assert got._mapping["name"] == "renamed"
    with pg.read() as s:
        assert s.execute(_READ, {"w_id": wid}).one().repos == [{"url": "https://x/y.git"}]  # committed with the session
    with pg.write() as s:
        assert direct.first(s.connection(), _RENAME, {"w_id": "nobody", "w_name": "x"}) is None


def test_errors_are_sqlalchemys_and_the_transaction_rolls_back(pg):
    with pg.write() as s:
        wid = _add(s.connection(), w_slug="taken")
    with pytest.raises(IntegrityError):  # the API's 409 handler catches this one
        with pg.write() as s:
            _add(s.connection(), w_slug="fresh")
            _add(s.connection(), w_slug="taken")
    with pg.read() as s:
        assert s.execute(select(_ws.c.slug).where(_ws.c.slug == "fresh")).first() is None
        assert s.execute(_READ, {"w_id": wid}).one()


def test_a_lost_connection_is_sqlalchemys_operational_error(pg):
    with pytest.raises(OperationalError):  # the API answers 503 and the daemon retries
        with pg.write() as s:
            conn = s.connection()
            conn.connection.dbapi_connection.pgconn.finish()  # the socket is gone mid-transaction
            direct.rows(conn, _READ, {"w_id": "x"})
    with pg.write() as s:  # and the pool hands out a working connection afterwards
        assert direct.rows(s.connection(), _READ, {"w_id": "x"}) == []


def test_the_finish_and_claim_request_skips_sqlalchemys_execution(api, pg, monkeypatch):
    from tests.api.test_claim_scale import _daemon

    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "w", "provider": "command", "command": ["true"], "max_concurrent_tasks": 1})
    for i in range(2):
        api.post("/api/issues", json={"title": f"t{i}", "assignee": "w"})
    tid = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    through_sqlalchemy: list[str] = []
    real = Connection._execute_clauseelement

    deriving = []

    def watched(self, elem, *a, **kw):
        if not deriving:
            through_sqlalchemy.append(str(elem)[:60])
        return real(self, elem, *a, **kw)

    # The inbox's derivation before the commit (issue 27 §3: a completed run asks the issue's
    # subscribers to review) reads and writes through the ORM on purpose; the finish's and the
    # claim's own statements are what this test holds to the direct path.
    from predictorx.service import inbox_feed
    real_derive = inbox_feed.derive

    def derive(session):
        deriving.append(1)
        try:
            real_derive(session)
        finally:
            deriving.pop()

    monkeypatch.setattr(inbox_feed, "derive", derive)
    # The claimed task's sweep (issue 30) is the ORM reads `GET …/harness/sweep` made on its own
    # request before: carried by the claim to save that request, not made direct.
    from predictorx.service import workflow_sweep
    real_sweep = workflow_sweep.at_claim

    def at_claim(session, task, *more):
        deriving.append(1)
        try:
            return real_sweep(session, task, *more)
        finally:
            deriving.pop()

    monkeypatch.setattr(workflow_sweep, "at_claim", at_claim)
    monkeypatch.setattr(Connection, "_execute_clauseelement", watched)
    done = d.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed", "claim_next": 1}).json()
    assert done["status"] == "completed" and len(done["claimed"]) == 1
    assert done["claimed"][0]["task"]["status"] == "dispatched"
    # The finish, the mark, the agents' lock, the count, the token with the context, the NOTIFY:
    # none of them through SQLAlchemy's execution layer (each was, before; six statements).
    assert through_sqlalchemy == []
    assert len(TASK_ROW_COLUMNS) > 10  # (the rows those statements return are wide)
