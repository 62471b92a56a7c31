"""agent.permissions: how an ACP agent's permission requests are answered — "allow" (the allow
option: what headless runs of every CLI do), "deny", or "ask" (a person picks; agents/acp_client.py;
issue 25); task.permission_answers: what people picked, by question, for the daemon to read

Revision ID: 0017
Revises: 0016
"""
import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent") as batch:
        batch.add_column(sa.Column("permissions", sa.String(8), nullable=False, server_default="allow"))
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("permission_answers", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.drop_column("permission_answers")
    with op.batch_alter_table("agent") as batch:
        batch.drop_column("permissions")
