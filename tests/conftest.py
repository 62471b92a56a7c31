"""Shared fixtures: isolated state dirs, databases on SQLite and (when configured) PostgreSQL."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

POSTGRES_URL = os.environ.get("PREDICTORX_TEST_POSTGRES_URL")
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES_URL else [])


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test ever touches the user's real state dir, workspaces root or agents-room db."""
    home = tmp_path_factory.mktemp("pxhome")
    monkeypatch.setenv("PREDICTORX_HOME", str(home / "state"))
    monkeypatch.setenv("PREDICTORX_WORKSPACES_ROOT", str(home / "workspaces"))
    monkeypatch.setenv("AGENTS_ROOM_DB", str(home / "room.db"))
    for var in ("PREDICTORX_SERVER_URL", "PREDICTORX_TOKEN", "PREDICTORX_DATABASE_URL", "PREDICTORX_WORKSPACE"):
        monkeypatch.delenv(var, raising=False)
    for var, value in (("GIT_AUTHOR_NAME", "Test"), ("GIT_AUTHOR_EMAIL", "test@example.com"),
                       ("GIT_COMMITTER_NAME", "Test"), ("GIT_COMMITTER_EMAIL", "test@example.com")):
        monkeypatch.setenv(var, value)
    return home


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


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'px.db'}"
        return
    url, schema = postgres_schema_url(POSTGRES_URL)
    try:
        yield url
    finally:
        drop_postgres_schema(POSTGRES_URL, schema)


@pytest.fixture
def db(database_url: str):
    from predictorx.store.db import Database

    database = Database(database_url)
    database.migrate()
    yield database
    database.dispose()
