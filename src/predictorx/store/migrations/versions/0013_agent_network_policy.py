"""agent.network, agent.allow_hosts: the network policy of an agent's sandboxed runs — "open" (the
host's network) or "allowlist" (its own network namespace, only these hosts, through the daemon's
proxy; issue 29)

Revision ID: 0013
Revises: 0011
"""
import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent") as batch:
        batch.add_column(sa.Column("network", sa.String(16), nullable=False, server_default="open"))
        batch.add_column(sa.Column("allow_hosts", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent") as batch:
        batch.drop_column("allow_hosts")
        batch.drop_column("network")
