"""task.review (the agent's work: branch, baseline, diff) and task.issue_status_before (where a
cancelled or failed only run puts its issue back)

Revision ID: 0008
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("review", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("issue_status_before", sa.String(length=30), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.drop_column("issue_status_before")
        batch.drop_column("review")
