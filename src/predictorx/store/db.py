"""Engines and sessions for SQLite (embedded default) and PostgreSQL (scale path).

SQLite runs in WAL mode with a busy timeout and foreign keys on every connection. A transaction
that writes starts with `BEGIN IMMEDIATE`: a deferred transaction that later tries to write fails
at once with SQLITE_BUSY instead of waiting, which is exactly the race a claim must not lose.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
import importlib.util
import os
from pathlib import Path
import select

from sqlalchemy import Engine, create_engine, event, exc
from sqlalchemy.orm import Session, sessionmaker

from .. import config
from . import bounded  # noqa: F401 — registers the length check on every flush

BUSY_TIMEOUT_MS = 10_000


def normalize_url(url: str) -> str:
    """Accept plain `postgresql://` URLs and pick the psycopg 3 driver."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    if url.startswith("postgresql+psycopg://") and importlib.util.find_spec("psycopg") is None:
        raise ValueError("a PostgreSQL database needs its driver: install Predictor X with the extra "
                         "`postgres` (pip install 'predictorx[postgres]')")
    return url


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def _private_sqlite_file(path: Path) -> None:
    """The database is 0600 (R-SEC-7); SQLite gives its -wal and -shm files the same mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        return  # SQLite will say what is wrong with the path
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        config.private_file(p)


def make_engine(url: str | None = None) -> Engine:
    url = normalize_url(url or config.database_url())
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            _private_sqlite_file(Path(path.split("?", 1)[0]))
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
            pool_size=20,
            max_overflow=20,
        )
        _configure_sqlite(engine)
        return engine
    engine = create_engine(url, pool_size=10, max_overflow=20)
    event.listen(engine, "checkout", _drop_if_cut)
    return engine


def _drop_if_cut(dbapi_conn, _record, _proxy) -> None:
    """Pessimistic disconnect handling without a round trip: an idle pooled connection has nothing
    to read, so one whose socket is readable (PostgreSQL restarted or ended the session: its last
    words and EOF are waiting) or that psycopg knows is broken is dropped, with every connection
    pooled before it, and the checkout gets a new one. SQLAlchemy's `pool_pre_ping` sent a
    `SELECT 1` on every checkout instead: one round trip more on every request."""
    if dbapi_conn.closed or dbapi_conn.broken:
        raise exc.InvalidatePoolError("the pooled connection is closed")
    poller = select.poll()
    poller.register(dbapi_conn.fileno(), select.POLLIN | select.POLLPRI)
    if poller.poll(0):
        raise exc.InvalidatePoolError("the server ended the pooled connection")


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see module doc)
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        immediate = conn.get_execution_options().get("sqlite_immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


#: session.info key: the (operation, table) pairs a write transaction wrote, for whoever must react
#: to a kind of change once it commits (the server forgets cached principals when tokens or
#: memberships change). Statements through the session and ORM flushes are both recorded.
WRITTEN = "px.written"


def _record_statement(state) -> None:  # an ORMExecuteState
    if state.is_select:
        return
    op = "update" if state.is_update else "delete" if state.is_delete else "insert" if state.is_insert else None
    if op is not None:
        name = getattr(getattr(state.statement, "table", None), "name", None)
        state.session.info.setdefault(WRITTEN, set()).add((op, name))


def _record_flush(session: Session, _context, _instances) -> None:
    written = session.info.setdefault(WRITTEN, set())
    for op, objects in (("insert", session.new), ("update", session.dirty), ("delete", session.deleted)):
        for obj in objects:
            written.add((op, getattr(obj, "__tablename__", None)))


class Database:
    """One engine plus two session factories: read (deferred) and write (immediate)."""

    def __init__(self, url: str | None = None, engine: Engine | None = None):
        self.engine = engine or make_engine(url)
        self.sqlite = is_sqlite(self.engine)
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        write_engine = self.engine.execution_options(sqlite_immediate=True) if self.sqlite else self.engine
        self._write = sessionmaker(write_engine, expire_on_commit=False)
        event.listen(self._write, "do_orm_execute", _record_statement)
        event.listen(self._write, "before_flush", _record_flush)

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._read() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction that commits on success and rolls back on any error."""
        with self._write() as session, session.begin():
            yield session

    def migrate(self) -> None:
        from .migrate import upgrade

        upgrade(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()
