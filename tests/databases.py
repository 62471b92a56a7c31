"""Which databases the suite runs against, and a database of its own for every test.

Migrating from empty costs seconds (every Alembic revision; ~2 s on SQLite, 3–8 s on PostgreSQL
on a loaded machine) and most tests need a database at head, so each test process migrates once
into a template and every test gets a copy of it: a file copy on SQLite, `CREATE DATABASE …
TEMPLATE` on PostgreSQL (tens of ms). A database per test (not a schema in the shared `test`
database) also keeps each test's NOTIFY traffic to itself when tests run in parallel. The
migrations themselves run from empty in tests/store (`empty_database_url`).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

POSTGRES_URL = os.environ.get("PREDICTORX_TEST_POSTGRES_URL")
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES_URL else [])


def postgres_schema_url(base: str) -> tuple[str, str]:
    """A fresh schema per database fixture, so runs never see each other's rows."""
    import psycopg

    schema = f"pxt_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options=-csearch_path%3D{schema}", schema


def drop_postgres_schema(base: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


# -- SQLite --------------------------------------------------------------------------------------

def migrated_sqlite_template(path: Path) -> Path:
    """A SQLite file at the migrations' head, whole in itself (its WAL folded in), to be copied."""
    from predictorx.store.db import Database

    db = Database(f"sqlite:///{path}")
    db.migrate()
    db.dispose()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def sqlite_copy(template: Path, path: Path) -> str:
    """The URL of a copy of `template` at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


# -- PostgreSQL ----------------------------------------------------------------------------------

#: Databases a run made are named testdb_<unix time>_<random> (not pxt_…, a task token's look); a
#: run that died (killed, machine stopped) could not drop its own, so a run drops those older than
#: this when it starts.
STALE_AFTER_S = 6 * 3600
_OURS = re.compile(r"^testdb_(\d{10})_[0-9a-f]{8}$")


class PostgresDatabases:
    """The databases this test process makes on the server of `base` (their names are its own)."""

    def __init__(self, base: str):
        self.base = base
        self.template: str | None = None
        self._lock = threading.Lock()
        self._drops: queue.Queue[str | None] = queue.Queue()
        self._dropper: threading.Thread | None = None

    def url(self, name: str) -> str:
        return urlunsplit(urlsplit(self.base)._replace(path=f"/{name}"))

    def _admin(self):
        import psycopg

        return psycopg.connect(self.base, autocommit=True, connect_timeout=10)

    def _create(self, template: str) -> str:
        name = f"testdb_{int(time.time())}_{uuid.uuid4().hex[:8]}"
        with self._admin() as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
        return name

    def migrated(self) -> str:
        """A new database at the migrations' head (a copy of this process's template)."""
        with self._lock:
            if self.template is None:
                self._drop_stale()
                template = self._create("template0")
                from predictorx.store.db import Database

                db = Database(self.url(template))
                db.migrate()
                db.dispose()  # no connection may stay on a template that is copied
                self.template = template
            return self._create(self.template)

    def empty(self) -> str:
        """A new, empty database."""
        return self._create("template0")

    def drop_later(self, name: str) -> None:
        """Dropped by a thread of its own: DROP DATABASE waits for a checkpoint, seconds under load."""
        with self._lock:
            if self._dropper is None:
                self._dropper = threading.Thread(target=self._drop_each, name="testdb-dropper", daemon=True)
                self._dropper.start()
        self._drops.put(name)

    def _drop_each(self) -> None:
        while (name := self._drops.get()) is not None:
            self._drop(name)

    def _drop(self, name: str) -> None:
        import psycopg

        try:
            with self._admin() as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        except psycopg.Error:
            pass  # the server went away; a later run drops it as stale

    def _drop_stale(self) -> None:
        with self._admin() as conn:
            names = [r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'testdb\\_%'")]
        for name in names:
            made = _OURS.match(name)
            if made and time.time() - int(made[1]) > STALE_AFTER_S:
                self._drop(name)

    def close(self) -> None:
        """Waits for the drops still queued, then drops the template."""
        if self._dropper is not None:
            self._drops.put(None)
            self._dropper.join(timeout=300)
        if self.template is not None:
            self._drop(self.template)
            self.template = None


POSTGRES = PostgresDatabases(POSTGRES_URL) if POSTGRES_URL else None
