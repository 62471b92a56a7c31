"""SQLite store: connection settings, schema migrations, immediate transactions.

Every connection gets WAL, ``busy_timeout`` and ``foreign_keys``. Every
read-check-write runs inside :func:`immediate`, which opens ``BEGIN IMMEDIATE``
(taking the write lock up front, so two writers can never both pass a check)
and retries on ``SQLITE_BUSY`` instead of surfacing it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator

BUSY_TIMEOUT_MS = 5000
#: total time :func:`immediate` keeps retrying a busy database before giving up
BUSY_GIVE_UP_S = 60.0


def default_db_path() -> Path:
    """``AGENTS_ROOM_DB`` if set, else ``~/.agents-room/room.db``."""
    env = os.environ.get("AGENTS_ROOM_DB")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".agents-room" / "room.db"


# Each entry upgrades the schema from version i to i+1. Never edit a released
# step: add a new one. Tests build a store at every earlier version and migrate.
MIGRATIONS: list[str] = [
    # v1: rooms, sessions, membership, messages (one room each), deliveries
    """
    CREATE TABLE rooms (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at REAL NOT NULL
    );
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        harness TEXT,
        harness_key TEXT,
        label TEXT,
        cwd TEXT,
        repo TEXT,
        pid INTEGER,
        created_at REAL NOT NULL,
        last_seen REAL NOT NULL,
        ended_at REAL
    );
    CREATE TABLE memberships (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        room_id INTEGER NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
        joined_at REAL NOT NULL,
        PRIMARY KEY (session_id, room_id)
    );
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        sender TEXT NOT NULL,
        room_id INTEGER REFERENCES rooms(id),
        selector TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL
    );
    CREATE TABLE deliveries (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        recipient TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'stored',
        offered_at REAL,
        read_at REAL,
        PRIMARY KEY (message_id, recipient)
    );
    """,
    # v2: leases
    """
    CREATE TABLE leases (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        repo TEXT NOT NULL,
        pattern TEXT NOT NULL,
        mode TEXT NOT NULL CHECK (mode IN ('exclusive', 'shared')),
        acquired_at REAL NOT NULL,
        expires_at REAL NOT NULL
    );
    CREATE INDEX leases_repo ON leases(repo);
    """,
    # v3: reads (content hash per session and path)
    """
    CREATE TABLE reads (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        repo TEXT NOT NULL,
        path TEXT NOT NULL,
        hash TEXT NOT NULL,
        read_at REAL NOT NULL,
        PRIMARY KEY (session_id, repo, path)
    );
    CREATE INDEX reads_path ON reads(repo, path);
    """,
    # v4: audit events
    """
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        kind TEXT NOT NULL,
        session_id TEXT,
        data TEXT
    );
    CREATE INDEX events_at ON events(at);
    """,
    # v5: exact liveness, autonomy, tags, stop guard, recipient counts, notices
    """
    ALTER TABLE sessions ADD COLUMN pid_start TEXT;
    ALTER TABLE sessions ADD COLUMN env_marker TEXT;
    ALTER TABLE sessions ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE sessions ADD COLUMN autonomy INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN repo_root TEXT;
    ALTER TABLE sessions ADD COLUMN stop_block_pending INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN stop_block_turn TEXT;
    ALTER TABLE sessions ADD COLUMN stop_blocks TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE sessions ADD COLUMN wake_waiter TEXT;
    ALTER TABLE deliveries ADD COLUMN offer_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN recipient_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN kind TEXT NOT NULL DEFAULT 'msg';
    ALTER TABLE leases ADD COLUMN notified INTEGER NOT NULL DEFAULT 0;
    UPDATE messages SET recipient_count =
        (SELECT count(*) FROM deliveries d WHERE d.message_id = messages.id);
    CREATE INDEX sessions_harness_key ON sessions(harness_key);
    """,
    # v6: a message belongs to every room its sender was in (message_rooms)
    """
    CREATE TABLE message_rooms (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        room_id INTEGER NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
        PRIMARY KEY (message_id, room_id)
    );
    INSERT OR IGNORE INTO message_rooms(message_id, room_id)
        SELECT id, room_id FROM messages WHERE room_id IS NOT NULL;
    CREATE INDEX message_rooms_room ON message_rooms(room_id, message_id);
    CREATE INDEX deliveries_recipient ON deliveries(recipient, state);
    CREATE INDEX messages_sender ON messages(sender, id);
    CREATE INDEX messages_expires ON messages(expires_at);
    CREATE INDEX memberships_room ON memberships(room_id);
    CREATE INDEX events_kind ON events(kind, at);
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(Exception):
    pass


def connect(path: Path | str | None = None, *, migrate: bool = True) -> sqlite3.Connection:
    """Open the store with WAL, busy_timeout and foreign keys; migrate to the latest schema."""
    p = Path(path) if path is not None else default_db_path()
    if str(p) != ":memory:":
        p.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(p), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    _retry(lambda: conn.execute("PRAGMA journal_mode = WAL"))
    conn.execute("PRAGMA synchronous = NORMAL")
    if migrate:
        migrate_to(conn, SCHEMA_VERSION)
    return conn


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate_to(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Apply migrations up to ``target``; each step and its version bump in one transaction."""
    found = schema_version(conn)
    if found > SCHEMA_VERSION:
        raise StoreError(f"store schema version {found} is newer than this agents-room ({SCHEMA_VERSION}); upgrade agents-room")
    if found >= target:
        return found
    with immediate(conn):
        current = schema_version(conn)
        if current > SCHEMA_VERSION:
            raise StoreError(f"store schema version {current} is newer than this agents-room ({SCHEMA_VERSION})")
        for version in range(current, target):
            for stmt in _split(MIGRATIONS[version]):
                conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {version + 1}")
    return schema_version(conn)


def _split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


def _retry(fn):
    deadline = time.monotonic() + BUSY_GIVE_UP_S
    delay = 0.001
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() > deadline:
                raise
            import random

            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.05)


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; busy errors on BEGIN are retried, never surfaced.

    The write lock is taken before the first read, so the read-check-write
    inside is atomic with respect to every other process.
    """
    if conn.in_transaction:  # nested use joins the outer transaction
        yield conn
        return
    _retry(lambda: conn.execute("BEGIN IMMEDIATE"))
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        _retry(lambda: conn.execute("COMMIT"))
