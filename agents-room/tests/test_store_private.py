"""Issue 29 finding 9: the store holds every message, so only its owner may read it. Used on its own
under umask 022 it was room.db 0644 in a 0755 folder, and another local user read every message;
now the file (and its -wal/-shm) is 0600 in a 0700 folder whatever the umask, and a store made
before that is tightened when it is next opened."""

import os
import sqlite3
import stat

import pytest

from agents_room import store

from room_helpers import run_cli


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_store_is_private_whatever_the_umask(tmp_path, umask_022):
    db = tmp_path / "state" / "agents-room" / "room.db"
    p = run_cli("--db", str(db), "join", "--room", "x", "--label", "a", cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    conn = store.connect(db)  # a writer keeps the -wal and -shm files there
    conn.execute("CREATE TABLE IF NOT EXISTS probe (x)")
    assert _mode(db) == 0o600
    assert (_mode(db.with_name("room.db-wal")), _mode(db.with_name("room.db-shm"))) == (0o600, 0o600)
    assert _mode(db.parent) == 0o700
    assert _mode(db.parent.parent) == 0o755  # parents it had to make are the user's ordinary folders
    conn.close()


def test_the_default_store_folder_is_private(tmp_path, monkeypatch, umask_022):
    monkeypatch.delenv("AGENTS_ROOM_DB")
    store.connect().close()
    home = tmp_path / "home" / ".agents-room"
    assert (_mode(home), _mode(home / "room.db")) == (0o700, 0o600)


def test_an_older_world_readable_store_is_tightened_on_open(tmp_path, monkeypatch, umask_022):
    monkeypatch.delenv("AGENTS_ROOM_DB")
    folder = tmp_path / "home" / ".agents-room"
    folder.mkdir(mode=0o755)
    db = folder / "room.db"
    old = sqlite3.connect(db)  # as an earlier agents-room left it: 0644 files in a 0755 folder
    old.execute("PRAGMA journal_mode = WAL")
    old.execute("CREATE TABLE t (x)")
    for path in (db, folder / "room.db-wal", folder / "room.db-shm"):
        os.chmod(path, 0o644)
    os.chmod(folder, 0o755)
    store.connect().close()
    assert _mode(folder) == 0o700 and _mode(db) == 0o600
    assert (_mode(folder / "room.db-wal"), _mode(folder / "room.db-shm")) == (0o600, 0o600)  # `old` keeps them
    old.close()


def test_a_folder_the_user_chose_keeps_its_mode_but_the_files_do_not(tmp_path, umask_022):
    shared = tmp_path / "project"
    shared.mkdir(mode=0o755)
    db = shared / "room.db"
    sqlite3.connect(db).close()
    os.chmod(db, 0o644)
    store.connect(db).close()
    assert (_mode(shared), _mode(db)) == (0o755, 0o600)
