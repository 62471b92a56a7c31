"""task.prompt (a follow-up request: the comment that mentioned the agent) and task.pending_prompt
(requests that arrived while the task was under way), R-EX-10

Revision ID: 0006
Revises: 0004
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("prompt", sa.Text(), nullable=True))
        batch.add_column(sa.Column("pending_prompt", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.drop_column("pending_prompt")
        batch.drop_column("prompt")
