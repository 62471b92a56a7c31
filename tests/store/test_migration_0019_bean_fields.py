"""Migration 0019 (issue 24 item 4): existing beans get the beans id their exports carried
(`px-<first 8 of id>`), the title is no longer unique under an issue, and the id is; downgrade
restores the old constraint."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from predictorx.store.db import Database
from predictorx.store.migrate import downgrade, upgrade

_BEAN = ("INSERT INTO bean (id, workspace_id, issue_id, {extra}title, body, status, notes, version, created_at,"
         " updated_at) VALUES (:id, 'w', 'i', {values}:title, '', 'created', '[]', 1, CURRENT_TIMESTAMP,"
         " CURRENT_TIMESTAMP)")


def test_0019_keys_old_beans_and_lets_two_share_a_title(empty_database_url):
    db = Database(empty_database_url)
    upgrade(db.engine, "0017")
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO workspace (id, name, slug, repos, issue_counter, created_at)"
                          " VALUES ('w', 'W', 'w', '[]', 1, CURRENT_TIMESTAMP)"))
        conn.execute(text("INSERT INTO issue (id, workspace_id, number, title, body, status, priority, created_at,"
                          " updated_at) VALUES ('i', 'w', 1, 'I', '', 'todo', 'none', CURRENT_TIMESTAMP,"
                          " CURRENT_TIMESTAMP)"))
        conn.execute(text(_BEAN.format(extra="", values="")),
                     {"id": "0123456789abcdef-old", "title": "Old"})
    upgrade(db.engine, "head")
    with db.engine.begin() as conn:
        assert conn.execute(text("SELECT key, draft FROM bean")).one() in (("px-01234567", False), ("px-01234567", 0))
        conn.execute(text(_BEAN.format(extra="key, ", values="'beans-1', ")), {"id": "b2", "title": "Old"})
    with pytest.raises(IntegrityError), db.engine.begin() as conn:  # the id is unique under the issue
        conn.execute(text(_BEAN.format(extra="key, ", values="'beans-1', ")), {"id": "b3", "title": "Other"})
    with db.engine.begin() as conn:
        conn.execute(text("DELETE FROM bean WHERE id = 'b2'"))
    downgrade(db.engine, "0017")
    with db.engine.begin() as conn:
        assert conn.execute(text("SELECT title FROM bean")).scalars().all() == ["Old"]
    db.dispose()
