"""A write transaction's events go out in one NOTIFY on PostgreSQL (server/state.py): a Core
statement, so SQLAlchemy works out its result columns once, not on every write of every request
(a text() statement's are read from the cursor and matched again on each execution)."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from predictorx.service.events import emit


def test_the_notify_statement_is_compiled_once_with_its_result_columns(app, db, database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("NOTIFY is PostgreSQL's")
    state = app.state.px
    seen = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if "pg_notify" in statement:
            seen.append(context.compiled)

    event.listen(db.engine, "after_cursor_execute", record)
    try:
        for n in range(2):
            with state.write() as s:
                emit(s, "ws", "task_queued", n=n)
    finally:
        event.remove(db.engine, "after_cursor_execute", record)
    assert len(seen) == 2 and seen[0] is seen[1]
    assert seen[0]._cached_metadata is not None  # a text() statement's never is
