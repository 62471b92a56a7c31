"""agent.ask_timeout_s: how long an ACP agent's `ask` question waits for a person before the
policy's default answers it (issue 25 §2); null: the daemon's PREDICTORX_ASK_TIMEOUT_S.

Revision ID: 0030
Revises: 0029
"""
import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent") as t:
        t.add_column(sa.Column("ask_timeout_s", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent") as t:
        t.drop_column("ask_timeout_s")
