"""index task (agent_id, status) for the per-agent concurrency check in claims

Revision ID: 0002
Revises: 0001
"""
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_task_agent_status", "task", ["agent_id", "status"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_task_agent_status", table_name="task")
