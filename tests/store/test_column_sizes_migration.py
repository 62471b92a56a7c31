"""Migration 0004 (issue 8 finding 7) widens columns without losing a row: on SQLite the batch
rebuild of `task` must not cascade into its messages."""

from __future__ import annotations

from sqlalchemy import text

from predictorx.store.db import Database
from predictorx.store.migrate import upgrade

NOW = "2026-12-01 12:00:00"


def test_widening_keeps_every_row_and_takes_long_values(empty_database_url):
    db = Database(empty_database_url)
    upgrade(db.engine, "0002")
    with db.engine.begin() as c:
        c.execute(text("INSERT INTO workspace (id, name, slug, repos, issue_counter, created_at) "
                       "VALUES ('w', 'W', 'w', '[]', 1, :t)"), {"t": NOW})
        c.execute(text("INSERT INTO issue (id, workspace_id, number, title, body, status, priority, created_at, "
                       "updated_at) VALUES ('i', 'w', 1, 'I', '', 'todo', 'none', :t, :t)"), {"t": NOW})
        c.execute(text("INSERT INTO agent (id, workspace_id, name, provider, instructions, max_concurrent_tasks, "
                       "created_at) VALUES ('a', 'w', 'a', 'command', '', 1, :t)"), {"t": NOW})
        c.execute(text("INSERT INTO task (id, workspace_id, issue_id, agent_id, status, session_id, cancel_requested, "
                       "attempt, message_seq, created_at, updated_at) VALUES ('t', 'w', 'i', 'a', 'running', 'old', "
                       ":f, 1, 2, :t, :t)"), {"t": NOW, "f": False})
        for seq in range(3):
            c.execute(text("INSERT INTO task_message (id, task_id, seq, kind, content, created_at) "
                           "VALUES (:id, 't', :seq, 'text', '{}', :t)"), {"id": f"m{seq}", "seq": seq, "t": NOW})
    upgrade(db.engine, "head")
    with db.engine.begin() as c:
        assert c.execute(text("SELECT count(*) FROM task_message")).scalar() == 3
        assert c.execute(text("SELECT session_id FROM task")).scalar() == "old"
        c.execute(text("UPDATE task SET session_id = :s"), {"s": "s" * 250})  # DataError on PostgreSQL before
    db.dispose()
