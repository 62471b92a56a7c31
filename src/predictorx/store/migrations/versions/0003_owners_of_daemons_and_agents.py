"""daemon.owner_id and agent.owner_id: a daemon id is bound to the person who first registered it,
and an agent runs only on its owner's daemons (R-SEC-5, R-SEC-6)

Existing rows are given the workspace's earliest owner: before this revision every daemon and
agent was reachable by the whole workspace, and the owner is the one person already trusted with
all of it. Such a daemon keeps working for that owner; anyone else re-registering it gets 403.

Revision ID: 0003
Revises: 0005
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0005"
branch_labels = None
depends_on = None

_FIRST_OWNER = ("(SELECT m.user_id FROM member m WHERE m.workspace_id = {t}.workspace_id AND m.role = 'owner' "
                "ORDER BY m.created_at LIMIT 1)")


def upgrade() -> None:
    for table in ("daemon", "agent"):
        op.add_column(table, sa.Column("owner_id", sa.String(36), nullable=True))
        op.create_index(f"ix_{table}_owner_id", table, ["owner_id"], unique=False)
        op.execute(f"UPDATE {table} SET owner_id = {_FIRST_OWNER.format(t=table)}")


def downgrade() -> None:
    for table in ("daemon", "agent"):
        op.drop_index(f"ix_{table}_owner_id", table_name=table)
        with op.batch_alter_table(table) as batch:
            batch.drop_column("owner_id")
