"""Which databases the suite runs against, and a database of its own for every test.

Migrating from empty costs seconds (every Alembic revision; ~2 s on SQLite, 3–8 s on PostgreSQL
on a loaded machine) and most tests need a database at head, so each test process migrates once
into a template and every test gets a copy of it: a file copy on SQLite, `CREATE DATABASE …
TEMPLATE` on PostgreSQL (tens of ms). A database per test (not a schema in the shared `test`
database) also keeps each test's NOTIFY traffic to itself when tests run in parallel. The
migrations themselves run from empty in tests/store (`empty_database_url`).

In a parallel run (`make test`: pytest-xdist) the controller builds both templates once, before it
starts the workers (`build_shared_templates`), and hands them over in the environment: four workers
each migrating their own under load cost a minute of CPU together, and the first PostgreSQL test of
each worker paid its worker's migration inside that test's setup and timeout — at load 8 it once hit
pytest's 120 s (`test_malformed_json_is_4xx[postgres]`). The PostgreSQL template accepts no
connection once migrated (ALLOW_CONNECTIONS false), so no session can hold it and make `CREATE
DATABASE … TEMPLATE` fail with "being accessed by other users".
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
#: Set by the controller of a parallel run for its workers (build_shared_templates).
SHARED_SQLITE = "PREDICTORX_TEST_SQLITE_TEMPLATE"
SHARED_POSTGRES = "PREDICTORX_TEST_POSTGRES_TEMPLATE"
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

    def __init__(self, base: str, template: str | None = None):
        self.base = base
        #: The template this process copies; one handed over by the controller is the controller's to drop.
        self.template: str | None = template
        self._owns_template = template is None
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
                self.template = self.build_template()
            return self._create(self.template)

    def build_template(self) -> str:
        """A database at the migrations' head that accepts no connection from now on (a copy of it
        fails while any session is connected to it)."""
        self._drop_stale()
        template = self._create("template0")
        from predictorx.store.db import Database

        db = Database(self.url(template))
        db.migrate()
        db.dispose()
        with self._admin() as conn:
            conn.execute(f"ALTER DATABASE {template} WITH ALLOW_CONNECTIONS false")
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (template,))
        return template

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
        if self.template is not None and self._owns_template:
            self._drop(self.template)
            self.template = None


POSTGRES = PostgresDatabases(POSTGRES_URL, os.environ.get(SHARED_POSTGRES)) if POSTGRES_URL else None


# -- one set of templates for a parallel run -----------------------------------------------------

def build_shared_templates(directory: Path) -> None:
    """In the controller of a parallel run, before any worker starts: both templates, handed to the
    workers (which inherit this process's environment) through SHARED_SQLITE and SHARED_POSTGRES."""
    os.environ[SHARED_SQLITE] = str(migrated_sqlite_template(directory / "px.db"))
    if POSTGRES is not None and POSTGRES.template is None:
        POSTGRES.template = POSTGRES.build_template()
        os.environ[SHARED_POSTGRES] = POSTGRES.template


def shared_sqlite_template() -> Path | None:
    """The SQLite template the controller built, if this is a worker of a parallel run."""
    path = os.environ.get(SHARED_SQLITE)
    return Path(path) if path and Path(path).is_file() else None
