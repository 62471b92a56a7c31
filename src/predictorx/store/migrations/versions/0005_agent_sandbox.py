"""agent.sandbox: run every task of this agent in the bubblewrap sandbox (R-SEC-6, issue 8)

Revision ID: 0005
Revises: 0007
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent") as batch:
        batch.add_column(sa.Column("sandbox", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("agent") as batch:
        batch.drop_column("sandbox")
