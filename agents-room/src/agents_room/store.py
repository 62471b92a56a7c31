"""SQLite store: connection settings, schema migrations, immediate transactions.

Every connection gets WAL, ``busy_timeout`` and ``foreign_keys``. Every
read-check-write runs inside :func:`immediate`, which opens ``BEGIN IMMEDIATE``
(taking the write lock up front, so two writers can never both pass a check)
and retries on ``SQLITE_BUSY`` instead of surfacing it.
"""

from __future__ import annotations

import errno
import os
import time

from .sqlite_api import sqlite3
from .errors import AgentsRoomError

TYPE_CHECKING = False  # pathlib and contextlib stay off the hooks' path (one hook process per tool call)
if TYPE_CHECKING:
    from pathlib import Path

BUSY_TIMEOUT_MS = 5000
#: total time :func:`immediate` keeps retrying a busy database before giving up
BUSY_GIVE_UP_S = 60.0


def default_db_path() -> Path:
    """``AGENTS_ROOM_DB`` if set, else ``~/.agents-room/room.db``."""
    from pathlib import Path

    env = os.environ.get("AGENTS_ROOM_DB")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".agents-room" / "room.db"


def _path_str(path: Path | str | None) -> str:
    """``str(Path(path))``, or of :func:`default_db_path` for None, without importing pathlib when
    the path is already absolute and normalised (the usual case: pathlib would leave it as it is)."""
    if path is not None:
        s = os.fspath(path)
    else:
        env = os.environ.get("AGENTS_ROOM_DB")
        s = os.path.expanduser(env) if env else os.path.join(os.path.expanduser("~"), ".agents-room", "room.db")
    if isinstance(s, str) and s.startswith("/") and os.path.normpath(s) == s:
        return s
    from pathlib import Path

    return str(Path(path) if path is not None else default_db_path())


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
    # v7: threads, importance, acknowledgements, direct messages, full-text search (R-ROOM-16)
    """
    ALTER TABLE messages ADD COLUMN thread_id INTEGER;
    ALTER TABLE messages ADD COLUMN reply_to INTEGER;
    ALTER TABLE messages ADD COLUMN importance TEXT NOT NULL DEFAULT 'normal';
    ALTER TABLE messages ADD COLUMN ack_required INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN direct INTEGER NOT NULL DEFAULT 0;
    UPDATE messages SET thread_id = id;
    CREATE INDEX messages_thread ON messages(thread_id, id);
    CREATE TABLE acks (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        acked_at REAL NOT NULL,
        PRIMARY KEY (message_id, session_id)
    );
    CREATE VIRTUAL TABLE messages_fts USING fts5(body, content='messages', content_rowid='id');
    INSERT INTO messages_fts(rowid, body) SELECT id, body FROM messages;
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, body) VALUES (new.id, new.body);
    END;
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, body) VALUES ('delete', old.id, old.body);
    END;
    """,
    # v8: a session's unread deliveries in message order, so a receive reads the oldest N and
    # stops, and the count it gives stops at a cap: its cost follows what it returns, not the backlog;
    # high and urgent messages by id, so a nudge names them past that cap
    """
    CREATE INDEX deliveries_unread ON deliveries(recipient, message_id) WHERE state IN ('stored','offered');
    CREATE INDEX messages_important ON messages(id) WHERE importance IN ('high','urgent');
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(AgentsRoomError):
    """The store cannot be used: the message is one sentence saying what is wrong and what to do."""


SQLITE_HEADER = b"SQLite format 3\x00"
_MOVE_ASIDE = "move it aside (mv {p} {p}.broken) and agents-room starts a fresh one; sessions rejoin at their next start"


def diagnose(path: Path | str | None = None) -> str | None:
    """Why the store at ``path`` cannot be used, in one sentence with what to do; None when it can.

    Checked without writing: the file's presence, permissions, SQLite header, integrity and schema
    version. ``connect`` raises a :class:`StoreError` with this sentence; ``doctor`` prints it.
    """
    from pathlib import Path

    p = Path(path) if path is not None else default_db_path()
    if str(p) == ":memory:":
        return None
    try:
        return _diagnose(p)
    except OSError as exc:  # e.g. a folder on the way that this user may not enter
        return f"the store {p} cannot be reached ({exc.strerror}); fix the permissions of its folders or point AGENTS_ROOM_DB elsewhere"


def _diagnose(p: Path) -> str | None:
    if p.exists() and not p.is_file():
        return f"the store {p} is not a file; point AGENTS_ROOM_DB at a file path"
    if not p.exists():
        folder = next((d for d in [p.parent, *p.parent.parents] if d.exists()), None)
        if folder is not None and not os.access(folder, os.W_OK | os.X_OK):
            return f"the store {p} does not exist and {folder} is not writable; make it writable or point AGENTS_ROOM_DB elsewhere"
        return None
    try:
        with open(p, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        return f"the store {p} cannot be read ({exc.strerror}); fix its permissions (chmod u+rw {p}) or point AGENTS_ROOM_DB elsewhere"
    if head and not head.startswith(SQLITE_HEADER):
        return f"the store {p} is not an SQLite database; " + _MOVE_ASIDE.format(p=p)
    if not os.access(p, os.W_OK) or not os.access(p.parent, os.W_OK | os.X_OK):
        return (f"the store {p} is read-only (agents-room writes on every call); make it and its folder writable "
                f"(chmod u+w {p} {p.parent}) or point AGENTS_ROOM_DB at a writable path")
    if not head:
        return None  # an empty file is a store not yet created
    try:
        conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            found = int(conn.execute("PRAGMA user_version").fetchone()[0])
            check = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return f"the store {p} is damaged ({exc}); " + _MOVE_ASIDE.format(p=p)
    if check != ["ok"]:
        return f"the store {p} is damaged ({check[0]}); " + _MOVE_ASIDE.format(p=p)
    if found > SCHEMA_VERSION:
        return (f"the store {p} has schema version {found}, newer than this agents-room understands ({SCHEMA_VERSION}); "
                "upgrade agents-room (pip install -U agents-room), or point AGENTS_ROOM_DB at another store")
    return None


def connect(path: Path | str | None = None, *, migrate: bool = True) -> sqlite3.Connection:
    """Open the store with WAL, busy_timeout and foreign keys; migrate to the latest schema.

    A store that cannot be used raises :class:`StoreError` with one sentence (what is wrong,
    what to do), never a raw SQLite error.
    """
    p = _path_str(path)
    try:
        return _connect(p, migrate)
    except StoreError as exc:
        raise StoreError(diagnose(p) or str(exc)) from None
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(diagnose(p) or f"the store {p} cannot be opened ({exc}); run `agents-room doctor`") from None


#: Stores this process keeps a read-only connection to (:func:`keep_warm`): path -> (it, (dev, inode))
_WARM: dict[str, tuple[sqlite3.Connection, tuple[int, int]]] = {}
_KEEP_WARM = {"on": False}


def keep_warm() -> None:
    """From now on this process (``run-config --serve``: a run opens the store twice, to join and to
    end its session) keeps each store it opens warm: one read-only connection to it stays open.

    Without one, the store was usually opened and closed by connections that were each its last:
    an open read the write-ahead log back into a new shared-memory index, and the close of the last
    connection checkpointed the log into the database and deleted both (~2 ms of CPU per open, most
    of a run's configuration; issue 30). A read-only connection can neither checkpoint nor delete
    anything, at its close either: a store moved aside and made again at its path (its inode
    changes) gets a new one, and the old one is closed without touching the files now there."""
    _KEEP_WARM["on"] = True


def _warm(p: str) -> None:
    if not _KEEP_WARM["on"] or p == ":memory:":
        return
    try:
        st = os.stat(p)
    except OSError:
        return
    held = _WARM.get(p)
    if held is not None and held[1] == (st.st_dev, st.st_ino):
        return
    if held is not None:
        del _WARM[p]
        held[0].close()
    try:
        conn = sqlite3.connect(f"file:{_uri_path(p)}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                               isolation_level=None, check_same_thread=False)
    except sqlite3.Error:
        return
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # (opened lazily: the file is read now)
    except sqlite3.Error:
        conn.close()
        return
    _WARM[p] = (conn, (st.st_dev, st.st_ino))


def _uri_path(p: str) -> str:
    """`p` in an SQLite URI (its escapes: `%`, and `?` and `#`, which would end the path; no urllib,
    which the hooks that import this module would pay for)."""
    return p.replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _connect(p: str, migrate: bool) -> sqlite3.Connection:
    """`p` as pathlib spells it (:func:`_path_str`); the checks as Path.mkdir and Path.exists make them."""
    if p != ":memory:":
        _private_folder(os.path.dirname(p) or ".")
        if _exists(p):
            why = _quick_refusal(p)
            if why:
                raise StoreError(why)
            _tighten(p)
        else:
            _create_private(p)
    conn = sqlite3.connect(p, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False,
                           factory=StoreConnection)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        _retry(lambda: conn.execute("PRAGMA journal_mode = WAL"))
        conn.execute("PRAGMA synchronous = NORMAL")
        if migrate:
            migrate_to(conn, SCHEMA_VERSION)
    except BaseException:
        conn.close()
        raise
    _warm(p)
    return conn


# The store holds every message of every room: only its owner reads it, whatever the umask
# (issue 29 finding 9: with umask 022 room.db was 0644 in a 0755 folder). The file is made 0600
# before SQLite opens it; SQLite gives the -wal and -shm files the database file's mode. A store
# that predates this is tightened on open: its files always, its folder when it is agents-room's
# own (the default ~/.agents-room, or one agents-room made) — a folder AGENTS_ROOM_DB names that
# the user made is theirs to set.
STORE_FILE_MODE = 0o600
STORE_FOLDER_MODE = 0o700
_COMPANIONS = ("-wal", "-shm", "-journal")


def _private_folder(folder: str) -> None:
    try:
        os.mkdir(folder, STORE_FOLDER_MODE)
    except FileExistsError:
        if folder == os.path.join(os.path.expanduser("~"), ".agents-room"):
            _chmod_if_loose(folder, STORE_FOLDER_MODE)
        return
    except FileNotFoundError:  # its parents first, as the user's own folders (their usual mode)
        os.makedirs(os.path.dirname(folder) or ".", exist_ok=True)
        try:
            os.mkdir(folder, STORE_FOLDER_MODE)
        except FileExistsError:
            return
    os.chmod(folder, STORE_FOLDER_MODE)  # exactly 0700: a umask may also have taken the owner's bits


def _create_private(p: str) -> None:
    """An empty 0600 file: SQLite takes an empty file for a new database and keeps its mode."""
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), STORE_FILE_MODE)
    except FileExistsError:  # another process made it first: it tightens its own, we check ours
        _tighten(p)
        return
    try:
        os.fchmod(fd, STORE_FILE_MODE)
    finally:
        os.close(fd)


def _tighten(p: str) -> None:
    for path in (p, *(p + suffix for suffix in _COMPANIONS)):
        _chmod_if_loose(path, STORE_FILE_MODE)


def _chmod_if_loose(path: str, mode: int) -> None:
    """Take group's and others' bits away from a file or folder of this user (one stat when tight)."""
    try:
        st = os.stat(path)
        if st.st_mode & 0o077 and st.st_uid == os.geteuid():
            os.chmod(path, mode)
    except OSError:  # gone meanwhile, or not ours to change: nothing to tighten
        pass


def _exists(p: str) -> bool:
    """Path.exists: False when the path is missing, other errors (a folder this user may not enter) raise."""
    try:
        os.stat(p)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return False
        raise
    return True


def _quick_refusal(p: str) -> str | None:
    """The cheap checks of :func:`diagnose` (header, permissions), run on every open: the hook opens
    the store on every tool call, so the integrity check is left to ``doctor``."""
    try:
        with open(p, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        return f"the store {p} cannot be read ({exc.strerror}); fix its permissions (chmod u+rw {p}) or point AGENTS_ROOM_DB elsewhere"
    if head and head != SQLITE_HEADER:
        return f"the store {p} is not an SQLite database; " + _MOVE_ASIDE.format(p=p)
    if not os.access(p, os.W_OK):
        return (f"the store {p} is read-only (agents-room writes on every call); make it writable (chmod u+w {p}) "
                "or point AGENTS_ROOM_DB at a writable path")
    return None


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate_to(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Apply migrations up to ``target``; each step and its version bump in one transaction."""
    found = schema_version(conn)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"the store has schema version {found}, newer than this agents-room understands ({SCHEMA_VERSION}); "
            "upgrade agents-room (pip install -U agents-room), or point AGENTS_ROOM_DB at another store"
        )
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
    """Statements of one migration; a trigger body (BEGIN … END) stays one statement."""
    out: list[str] = []
    buf = ""
    for part in script.split(";"):
        buf += part
        if "CREATE TRIGGER" in buf.upper() and not buf.rstrip().upper().endswith("END"):
            buf += ";"
            continue
        if buf.strip():
            out.append(buf.strip())
        buf = ""
    return out


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


class StoreConnection(sqlite3.Connection):
    """A store connection with what its transaction asked to be done once it commits (the doorbells
    to ring, agents_room.bells): callables by a key, so each is done once."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.after_commit: dict = {}


def _after_commit(conn: sqlite3.Connection, committed: bool) -> None:
    pending = getattr(conn, "after_commit", None)
    if not pending:
        return
    todo = list(pending.values())
    pending.clear()
    for do in todo if committed else ():
        do()


class immediate:  # used as a function: `with immediate(conn):`
    """``BEGIN IMMEDIATE`` … ``COMMIT``; busy errors on BEGIN are retried, never surfaced.

    The write lock is taken before the first read, so the read-check-write
    inside is atomic with respect to every other process. Nested use joins the outer
    transaction. (A class, not contextlib.contextmanager: contextlib stays off the hooks' path.)
    """

    __slots__ = ("conn", "outer")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.outer = False

    def __enter__(self) -> sqlite3.Connection:
        conn = self.conn
        if conn.in_transaction:
            self.outer = True
            return conn
        _retry(lambda: conn.execute("BEGIN IMMEDIATE"))
        return conn

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.outer:
            return
        if exc_type is not None:
            _after_commit(self.conn, False)
            self.conn.execute("ROLLBACK")
            return  # the exception goes on
        _retry(lambda: self.conn.execute("COMMIT"))
        _after_commit(self.conn, True)  # a doorbell rings once what it announces is there to read
