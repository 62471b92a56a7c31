"""Which databases the suite runs against, and a fresh PostgreSQL schema per use."""

from __future__ import annotations

import os
import uuid

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


