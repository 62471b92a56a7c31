"""Indexes for the runs lists (issue 26 §6): a workspace's, an agent's and a daemon's runs newest
first, read a page at a time by the Runs, agent and daemon pages (service/runlists.py) without
sorting every run of the workspace.

Revision ID: 0028
Revises: 0027
"""
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_task_workspace_created", "task", ["workspace_id", "created_at", "id"])
    op.create_index("ix_task_agent_created", "task", ["agent_id", "created_at"])
    op.create_index("ix_task_daemon_created", "task", ["daemon_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_task_daemon_created", table_name="task")
    op.drop_index("ix_task_agent_created", table_name="task")
    op.drop_index("ix_task_workspace_created", table_name="task")
