"""autopilot (a runbook fired by cron or a signed webhook) and autopilot_firing (its history; the
unique (autopilot, slot) row is the claim that makes a firing happen once across replicas): issue
27 §5, store/autopilot_schema.py

Revision ID: 0025
Revises: 0024
"""
import sqlalchemy as sa
from alembic import op

TS = sa.DateTime(timezone=True)

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "autopilot",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("owner_id", sa.String(36), nullable=True),
        sa.Column("project_id", sa.String(36), nullable=True),
        sa.Column("title_template", sa.String(200), nullable=False),
        sa.Column("body_template", sa.Text(), nullable=False),
        sa.Column("workflow", sa.String(100), nullable=True),
        sa.Column("assignee", sa.String(200), nullable=True),
        sa.Column("cron", sa.String(100), nullable=True),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("next_due_at", TS, nullable=True),
        sa.Column("hook_id", sa.String(64), nullable=True, unique=True),
        sa.Column("hook_secret_sealed", sa.Text(), nullable=True),
        sa.Column("filter_path", sa.String(200), nullable=True),
        sa.Column("filter_value", sa.String(500), nullable=True),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("pause_reason", sa.String(500), nullable=True),
        sa.Column("paused_at", TS, nullable=True),
        sa.Column("failure_limit", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("workspace_id", "name", name="uq_autopilot_name"),
    )
    op.create_index("ix_autopilot_next_due_at", "autopilot", ["next_due_at"])
    op.create_table(
        "autopilot_firing",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("autopilot_id", sa.String(36), sa.ForeignKey("autopilot.id", ondelete="CASCADE"), nullable=False),
        sa.Column("workspace_id", sa.String(36), nullable=False),
        sa.Column("slot", sa.String(220), nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("due_at", TS, nullable=True),
        sa.Column("fired_at", TS, nullable=False),
        sa.Column("issue_id", sa.String(36), nullable=True),
        sa.Column("issue_number", sa.Integer(), nullable=True),
        sa.Column("task_id", sa.String(36), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("detail", sa.String(500), nullable=True),
        sa.Column("payload", sa.Text(), nullable=True),
        sa.Column("replay_of", sa.String(36), nullable=True),
        sa.UniqueConstraint("autopilot_id", "slot", name="uq_autopilot_firing_slot"),
    )
    op.create_index("ix_autopilot_firing_history", "autopilot_firing", ["autopilot_id", "fired_at"])
    op.create_index("ix_autopilot_firing_outcome", "autopilot_firing", ["outcome"])


def downgrade() -> None:
    op.drop_table("autopilot_firing")
    op.drop_table("autopilot")
