"""column sizes match what the API accepts, the same on SQLite and PostgreSQL (issue 8 finding 7)

A daemon's finish report with a 250-character session id failed on PostgreSQL (column 200) and
lost a finished run, while SQLite stored it. The columns that take client or agent text are
widened to the API's limits; `store/bounded.py` holds SQLite to the same lengths.

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# (table, column, old length, new length, nullable)
WIDENED = [
    ("workspace", "name", 200, 500, False),
    ("user_account", "name", 200, 500, False),
    ("token", "name", 200, 600, True),
    ("agent", "provider", 50, 100, False),
    ("agent", "model", 200, 500, True),
    ("daemon", "name", 200, 500, False),
    ("daemon", "hostname", 255, 500, True),
    ("daemon", "version", 50, 100, True),
    ("runtime", "provider", 50, 100, False),
    ("runtime", "version", 200, 500, True),
    ("runtime", "path", 1000, 4000, True),
    ("task", "branch_name", 300, 500, True),
    ("task", "session_id", 200, 2000, True),
]


def _alter(old_index: int, new_index: int) -> None:
    tables: dict[str, list] = {}
    for row in WIDENED:
        tables.setdefault(row[0], []).append(row)
    for table, rows in tables.items():
        with op.batch_alter_table(table) as batch:
            for _t, column, *lengths, nullable in rows:
                batch.alter_column(column, existing_type=sa.String(lengths[old_index]),
                                   type_=sa.String(lengths[new_index]), existing_nullable=nullable)


def upgrade() -> None:
    _alter(0, 1)


def downgrade() -> None:
    # Values longer than the old sizes are cut so the narrower columns can take them.
    bind = op.get_bind()
    for table, column, old, _new, _nullable in WIDENED:
        bind.execute(sa.text(f"UPDATE {table} SET {column} = substr({column}, 1, {old}) "
                             f"WHERE length({column}) > {old}"))
    _alter(1, 0)
