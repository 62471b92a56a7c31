"""agent.archived_at: an archived agent leaves lists and assignment; its runs keep their history
and its name (issue 13 §4 of the second round: deleting an agent no longer takes its runs with it)

Revision ID: 0009
Revises: 0010
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent") as batch:
        batch.add_column(sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent") as batch:
        batch.drop_column("archived_at")
