"""workflow_step.attempts and last_attempt_at: repeats of the same refused step by the same actor
are counted on one row instead of one row each (issue 12, the record's refusal bound)

Revision ID: 0010
Revises: 0006
"""
import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workflow_step") as batch:
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("last_attempt_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workflow_step") as batch:
        batch.drop_column("last_attempt_at")
        batch.drop_column("attempts")
