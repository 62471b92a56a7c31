"""The inbox's "Show more" deep in a long list (issue 27 §3, bench/inbox.py): the page after a cursor
starts the index range at the cursor — the database's plan bounds the index scan by created_at —
instead of walking the person's newest items down to it; and it still pages through ties of
created_at exactly once each. On SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from sqlalchemy import event, insert

from predictorx.service import inbox
from predictorx.service.auth import bootstrap_owner
from predictorx.store.inbox_schema import InboxItem

T0 = datetime(2026, 12, 5, 10, 0, tzinfo=timezone.utc)


def _seed(db, n: int = 300) -> tuple[str, str]:
    with db.write() as s:
        _, ws, user = bootstrap_owner(s) or (None, None, None)
        ws_id, user_id = ws.id, user.id
    rows = [{"id": str(uuid.uuid4()), "workspace_id": ws_id, "user_id": user_id, "kind": "mention", "state": "read",
             "source_key": f"k{i}", "title": f"item {i}", "detail": "", "link": "/",
             "created_at": T0 - timedelta(seconds=i // 3), "updated_at": T0} for i in range(n)]  # ties of 3
    with db.engine.begin() as conn:
        conn.execute(insert(InboxItem.__table__), rows)
        conn.exec_driver_sql("ANALYZE inbox_item" if db.engine.dialect.name == "postgresql" else "ANALYZE")
    return ws_id, user_id


def test_pages_after_a_cursor_see_each_item_once_through_ties(db):
    ws, user = _seed(db)
    seen, cursor = [], None
    with db.read() as s:
        while True:
            page = inbox.page(s, ws, user, state="all", cursor=cursor, limit=7)
            seen += [i["id"] for i in page["items"]]
            cursor = page["next"]
            if cursor is None:
                break
    assert len(seen) == len(set(seen)) == 300


def test_the_page_after_a_cursor_starts_the_index_range_at_it(db):
    ws, user = _seed(db)
    with db.read() as s:
        first = inbox.page(s, ws, user, state="all", limit=100)
    captured: list[tuple[str, object]] = []

    def keep(_conn, _cursor, statement, parameters, *_):
        if "FROM inbox_item" in statement and "ORDER BY" in statement:
            captured.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", keep)
    try:
        with db.read() as s:
            inbox.page(s, ws, user, state="all", cursor=first["next"], limit=20)
    finally:
        event.remove(db.engine, "before_cursor_execute", keep)
    statement, parameters = captured[-1]
    with db.engine.connect() as conn:
        if db.engine.dialect.name == "postgresql":
            # (a small table: ask for the plan of the ordered index, as with a long inbox)
            conn.exec_driver_sql("SET enable_seqscan = off")
            conn.exec_driver_sql("SET enable_sort = off")
            plan = " ".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, parameters))
            assert "Index" in plan and "created_at" in plan.split("Index Cond:", 1)[1].split("Filter", 1)[0], plan
        else:
            plan = " ".join(str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters))
            assert "ix_inbox_item_person" in plan and "created_at" in plan, plan
