"""issue.version (bumped by every change of a tracked field: what a page or client saw, so an edit
made on a stale copy is caught) and issue.field_changes (per field, the version that last changed it
and who did: a conflict names the other value and the person): issue 26 §1

Revision ID: 0026
Revises: 0025
"""
import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("issue") as batch:
        batch.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("field_changes", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("issue") as batch:
        batch.drop_column("field_changes")
        batch.drop_column("version")
