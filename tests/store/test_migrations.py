"""Schema changes are versioned migrations, tested from empty and from every earlier version (R-SC-3)."""

from __future__ import annotations

import pytest

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from predictorx.store import fulltext
from predictorx.store.db import Database
from predictorx.store.migrate import alembic_config, downgrade, upgrade
from predictorx.store.schema import Base


def _diff(db: Database) -> list:
    with db.engine.connect() as conn:
        # The full-text index (FTS5 table and triggers, GIN indexes) is DDL, not models.
        context = MigrationContext.configure(conn, opts={"include_name": fulltext.include_name})
        return compare_metadata(context, Base.metadata)


def _revisions(db: Database) -> list[str]:
    script = ScriptDirectory.from_config(alembic_config(db.engine))
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def test_upgrade_from_empty_matches_the_models(empty_database_url):
    db = Database(empty_database_url)
    upgrade(db.engine)
    assert _diff(db) == []
    db.dispose()


@pytest.mark.long  # make test-long (CI) runs it; test_upgrade_from_empty_matches_the_models stays in make test
@pytest.mark.timeout(600)  # every revision up and down: 75–120 s at load 20 (4 xdist workers among 7 runs)
def test_upgrade_from_every_earlier_version(empty_database_url):
    db = Database(empty_database_url)
    revisions = _revisions(db)
    assert revisions, "there must be at least one migration"
    # One pass up the chain, each migration undone and done again on the way: a downgrade that
    # leaves something behind fails the upgrade after it, one that removes too much shows in the
    # diff at the head (linear: the chain grows with every issue; from every version to head each
    # time was quadratic and passed 120 s on a loaded machine).
    for i, rev in enumerate(revisions):
        upgrade(db.engine, rev)
        downgrade(db.engine, revisions[i - 1] if i else "base")
        upgrade(db.engine, rev)
    assert _diff(db) == [], "upgrading step by step leaves the schema off the models"
    downgrade(db.engine, "base")
    assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
    upgrade(db.engine)
    assert _diff(db) == []
    db.dispose()


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'w.db'}")
    db.migrate()
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
    db.dispose()


def test_0012_turns_the_sandbox_on_for_every_existing_agent(empty_database_url):
    """Agents made while the sandbox was opt-in are sandboxed after the upgrade (issue 29)."""
    from sqlalchemy import text

    db = Database(empty_database_url)
    upgrade(db.engine, "0015")
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO workspace (id, name, slug, repos, issue_counter, created_at)"
                          " VALUES ('w', 'W', 'w', '[]', 0, CURRENT_TIMESTAMP)"))
        conn.execute(text("INSERT INTO agent (id, workspace_id, name, provider, instructions, max_concurrent_tasks,"
                          " sandbox, created_at) VALUES ('a', 'w', 'old', 'claude', '', 1, :off, CURRENT_TIMESTAMP)"),
                     {"off": False})
    upgrade(db.engine, "head")
    with db.engine.begin() as conn:
        assert conn.execute(text("SELECT sandbox FROM agent WHERE id = 'a'")).scalar() in (True, 1)
        conn.execute(text("INSERT INTO agent (id, workspace_id, name, provider, instructions, max_concurrent_tasks,"
                          " created_at) VALUES ('b', 'w', 'new', 'claude', '', 1, CURRENT_TIMESTAMP)"))
        assert conn.execute(text("SELECT sandbox FROM agent WHERE id = 'b'")).scalar() in (True, 1)
    downgrade(db.engine, "base")
    db.dispose()
