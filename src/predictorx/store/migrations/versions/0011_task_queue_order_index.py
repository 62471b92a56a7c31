"""index task (workspace_id, status, created_at, id): the claim's order, so a claim walks the
workspace's queued tasks in order and stops at the first it can take, whatever the queue's length

Revision ID: 0011
Revises: 0009
"""
from alembic import op

revision = "0011"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_task_queue_order", "task", ["workspace_id", "status", "created_at", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_task_queue_order", table_name="task")
