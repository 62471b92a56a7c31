"""R-ROOM-1: store settings, migrations from every earlier version, the DB override."""

import sqlite3
from pathlib import Path

import pytest

from agents_room import store
from agents_room.room import Room


def test_default_path_honours_env(db, monkeypatch, tmp_path):
    assert store.default_db_path() == db
    monkeypatch.delenv("AGENTS_ROOM_DB")
    assert store.default_db_path() == tmp_path / "home" / ".agents-room" / "room.db"


def test_every_connection_has_wal_busy_timeout_and_foreign_keys(db):
    conn = store.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == store.BUSY_TIMEOUT_MS
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.schema_version(conn) == store.SCHEMA_VERSION


def _seed(conn: sqlite3.Connection, version: int) -> None:
    """Rows as an agents-room at ``version`` would have written them."""
    if version >= 1:
        conn.execute("INSERT INTO rooms(id, name, created_at) VALUES (1, 'storefront', 1.0), (2, 'repo:api', 1.0)")
        conn.execute(
            "INSERT INTO sessions(id, harness, label, cwd, repo, pid, created_at, last_seen) "
            "VALUES ('s-00000001', 'claude', 'old', '/x', 'repo:api', NULL, 1.0, 1.0),"
            "('s-00000002', 'codex', 'other', '/y', 'repo:web', NULL, 1.0, 1.0)"
        )
        conn.execute("INSERT INTO memberships VALUES ('s-00000001', 1, 1.0), ('s-00000001', 2, 1.0), ('s-00000002', 1, 1.0)")
        conn.execute("INSERT INTO messages(id, sender, room_id, selector, body, created_at) VALUES (1, 's-00000001', 1, '*', 'hi', 2.0)")
        conn.execute("INSERT INTO deliveries(message_id, recipient, state) VALUES (1, 's-00000002', 'offered')")
        if version >= 5:
            conn.execute("UPDATE messages SET recipient_count=1")
        if version >= 6:
            conn.execute("INSERT INTO message_rooms VALUES (1, 1)")
    if version >= 2:
        conn.execute(
            "INSERT INTO leases(session_id, repo, pattern, mode, acquired_at, expires_at) VALUES ('s-00000001','repo:api','src/*','exclusive',1,9e9)"
        )
    if version >= 3:
        conn.execute("INSERT INTO reads VALUES ('s-00000001', 'repo:api', 'a.py', 'sha256:x', 1.0)")
    if version >= 4:
        conn.execute("INSERT INTO events(at, kind) VALUES (1.0, 'join')")


@pytest.mark.parametrize("version", range(0, store.SCHEMA_VERSION))
def test_migrates_from_every_earlier_version(tmp_path, version):
    path = tmp_path / f"v{version}.db"
    conn = store.connect(path, migrate=False)
    store.migrate_to(conn, version)
    assert store.schema_version(conn) == version
    _seed(conn, version)
    conn.close()

    conn = store.connect(path)  # migrates to the latest
    assert store.schema_version(conn) == store.SCHEMA_VERSION
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    r = Room(conn)
    if version >= 1:
        # the old message belongs to its room through message_rooms, and is still unread for its recipient
        assert r.history("s-00000002", "storefront")["messages"][0]["body"] == "hi"
        got = r.recv("s-00000002")
        assert [m["body"] for m in got["messages"]] == ["hi"]
        assert conn.execute("SELECT recipient_count FROM messages WHERE id=1").fetchone()[0] == 1
        # the unnormalised room from v1 is reported as split once its normalised twin exists
        r.join(session="s-00000002", rooms=["shared:storefront"], cwd=str(tmp_path))
        splits = r.doctor()["split_rooms"]
        assert splits and splits[0]["split_from"] == "storefront" and splits[0]["room"] == "shared:storefront"
    if version >= 2:
        assert r.who()["sessions"]
    # a fresh write works on the migrated store
    s = r.join(cwd=str(tmp_path), rooms=["x"])
    assert s["rooms"] == ["shared:x"]


def test_newer_store_is_refused(tmp_path):
    path = tmp_path / "new.db"
    conn = store.connect(path)
    conn.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(store.StoreError, match="newer"):
        store.connect(path)


def test_immediate_rolls_back_on_error(db):
    conn = store.connect(db)
    with pytest.raises(RuntimeError):
        with store.immediate(conn):
            conn.execute("INSERT INTO rooms(name, created_at) VALUES ('shared:z', 1)")
            raise RuntimeError
    assert conn.execute("SELECT count(*) FROM rooms").fetchone()[0] == 0


def test_agents_room_imports_nothing_from_predictorx():
    """agents-room is its own distribution (issue 10 item 7): no import of the platform, anywhere."""
    import ast
    from pathlib import Path

    import agents_room

    offenders = []
    for path in Path(agents_room.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "predictorx"]
    assert offenders == []


@pytest.mark.parametrize("path", ["/a/b/room.db", "/a//b/room.db", "/a/./b/room.db", "/a/b/", "//a/room.db", "///a/room.db",
                                  "/a/../b.db", "rel/room.db", "./room.db", "", ".", ":memory:", "~/x.db", "/"])
def test_the_store_path_is_spelled_as_pathlib_spells_it(path, monkeypatch):
    """connect() reads the usual (absolute, normalised) path without importing pathlib, as pathlib reads it."""
    assert store._path_str(path) == str(Path(path))
    assert store._path_str(Path(path)) == str(Path(path))
    monkeypatch.setenv("AGENTS_ROOM_DB", path)
    assert store._path_str(None) == str(store.default_db_path())


def test_immediate_commits_and_a_nested_one_joins_the_outer(db):
    conn = store.connect(db)
    count = "SELECT count(*) FROM rooms"
    with store.immediate(conn) as c:
        assert c is conn and conn.in_transaction
        with store.immediate(conn) as inner:
            assert inner is conn
            conn.execute("INSERT INTO rooms(name, created_at) VALUES ('shared:a', 1)")
        assert conn.in_transaction  # the inner one neither committed nor ended the transaction
    assert not conn.in_transaction and conn.execute(count).fetchone()[0] == 1
    with pytest.raises(KeyError):
        with store.immediate(conn):
            conn.execute("INSERT INTO rooms(name, created_at) VALUES ('shared:b', 1)")
            with store.immediate(conn):
                raise KeyError("x")  # goes through the inner one untouched, and the outer one rolls back
    assert not conn.in_transaction and conn.execute(count).fetchone()[0] == 1
