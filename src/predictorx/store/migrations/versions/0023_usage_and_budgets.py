"""run_usage (a run's tokens and cost, live), usage_day (those summed per day and agent, project,
issue, person, model: what rollups read), budget (soft and hard limits per workspace, project and
agent, per day or month, in money or tokens) and model_price (a workspace's own prices): issue 27
§1–2, store/usage_schema.py

Revision ID: 0023
Revises: 0022
"""
import sqlalchemy as sa
from alembic import op

TS = sa.DateTime(timezone=True)

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_usage",
        sa.Column("task_id", sa.String(36), sa.ForeignKey("task.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), nullable=False),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("project_id", sa.String(36), nullable=True),
        sa.Column("agent_id", sa.String(36), nullable=False),
        sa.Column("issue_id", sa.String(36), nullable=False),
        sa.Column("person_id", sa.String(36), nullable=True),
        sa.Column("model", sa.String(200), nullable=True),
        *(sa.Column(name, sa.BigInteger(), nullable=False) for name in (
            "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
            "total_tokens")),
        sa.Column("cost_micros", sa.BigInteger(), nullable=True),
        sa.Column("cost_source", sa.String(16), nullable=True),
        sa.Column("final", sa.Boolean(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_run_usage_ws_day", "run_usage", ["workspace_id", "day"])
    op.create_table(
        "usage_day",
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("dim", sa.String(8), primary_key=True),
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True),
        sa.Column("runs", sa.Integer(), nullable=False),
        *(sa.Column(name, sa.BigInteger(), nullable=False) for name in (
            "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens", "cost_micros")),
        sa.Column("unknown_cost_runs", sa.Integer(), nullable=False),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "budget",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("scope_id", sa.String(36), nullable=True),
        sa.Column("period", sa.String(8), nullable=False),
        sa.Column("metric", sa.String(8), nullable=False),
        sa.Column("limit_value", sa.BigInteger(), nullable=False),
        sa.Column("action", sa.String(8), nullable=False),
        sa.Column("created_by", sa.String(36), nullable=True),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_budget_workspace_id", "budget", ["workspace_id"])
    op.create_table(
        "model_price",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("input_micros", sa.BigInteger(), nullable=False),
        sa.Column("output_micros", sa.BigInteger(), nullable=False),
        sa.Column("cache_read_micros", sa.BigInteger(), nullable=True),
        sa.Column("cache_write_micros", sa.BigInteger(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("workspace_id", "model", name="uq_model_price"),
    )


def downgrade() -> None:
    op.drop_table("model_price")
    op.drop_index("ix_budget_workspace_id", table_name="budget")
    op.drop_table("budget")
    op.drop_table("usage_day")
    op.drop_index("ix_run_usage_ws_day", table_name="run_usage")
    op.drop_table("run_usage")
