"""Run Alembic migrations programmatically (the server migrates on start).

Every schema change is a versioned migration under migrations/versions, tested from empty and
from every earlier version on SQLite and PostgreSQL (R-SC-3, tests/store/test_migrations.py)."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["engine"] = engine
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    # Alembic's INFO lines ("Context impl SQLiteImpl", one per revision) say nothing a person
    # starting the server needs; warnings and errors still show.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    command.upgrade(alembic_config(engine), revision)


def downgrade(engine: Engine, revision: str) -> None:
    command.downgrade(alembic_config(engine), revision)
