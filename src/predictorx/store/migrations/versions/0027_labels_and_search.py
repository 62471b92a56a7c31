"""label and issue_label (a workspace's labels and the issues carrying them), and the full-text
index over issues and comments (SQLite FTS5 + triggers, PostgreSQL GIN): issue 26 §3,
store/label_schema.py and store/fulltext.py

It runs after every migration that rebuilds `issue` or `comment` on SQLite (a batch rebuild drops
the search triggers): issue.version (0026) comes first for that reason.

Revision ID: 0027
Revises: 0026
"""
import sqlalchemy as sa
from alembic import op

from predictorx.store import fulltext

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "label",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(50), nullable=False),
        sa.Column("color", sa.String(7), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("workspace_id", "name", name="uq_label_name"),
    )
    op.create_table(
        "issue_label",
        sa.Column("issue_id", sa.String(36), sa.ForeignKey("issue.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("label_id", sa.String(36), sa.ForeignKey("label.id", ondelete="CASCADE"), primary_key=True),
    )
    op.create_index("ix_issue_label_label_id", "issue_label", ["label_id", "issue_id"])
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in fulltext.POSTGRES_CREATE if postgres else fulltext.SQLITE_CREATE:
        op.execute(statement)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in fulltext.POSTGRES_DROP if postgres else fulltext.SQLITE_DROP:
        op.execute(statement)
    op.drop_index("ix_issue_label_label_id", table_name="issue_label")
    op.drop_table("issue_label")
    op.drop_table("label")
