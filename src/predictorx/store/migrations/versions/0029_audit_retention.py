"""workspace.audit_retention_days: a workspace's own audit-log retention (issue 28 §4), over the
server's PREDICTORX_AUDIT_RETENTION_DAYS; null means the server's; 0 keeps every event.

Revision ID: 0029
Revises: 0028
"""
import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workspace") as t:
        t.add_column(sa.Column("audit_retention_days", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workspace") as t:
        t.drop_column("audit_retention_days")
