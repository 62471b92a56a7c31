"""Forges (issue 22): forge connections, an issue's branches and pull requests on them, webhook
deliveries taken, a project's forge policy, and the pull request a follow-up task continues.

Revision ID: 0016
Revises: 0012
"""
import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0012"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "forge_connection",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("base_url", sa.String(2000), nullable=False),
        sa.Column("api_url", sa.String(2000), nullable=False),
        sa.Column("host", sa.String(500), nullable=False),
        sa.Column("credential_sealed", sa.Text, nullable=False),
        sa.Column("credential_last4", sa.String(8), nullable=False),
        sa.Column("webhook_secret_sealed", sa.Text, nullable=False),
        sa.Column("members_may_merge", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_by", sa.String(36)),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("workspace_id", "name", name="uq_forge_connection_name"),
    )
    op.create_index("ix_forge_connection_workspace_id", "forge_connection", ["workspace_id"])
    op.create_index("ix_forge_connection_host", "forge_connection", ["host"])
    op.create_table(
        "pull_request",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), nullable=False),
        sa.Column("issue_id", sa.String(36), sa.ForeignKey("issue.id", ondelete="CASCADE"), nullable=False),
        sa.Column("agent_id", sa.String(36)),
        sa.Column("task_id", sa.String(36)),
        sa.Column("connection_id", sa.String(36), sa.ForeignKey("forge_connection.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("repo_path", sa.String(1000), nullable=False),
        sa.Column("repo_url", sa.String(2000), nullable=False),
        sa.Column("branch", sa.String(500), nullable=False),
        sa.Column("base_branch", sa.String(500)),
        sa.Column("number", sa.Integer),
        sa.Column("url", sa.String(2000)),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("head_sha", sa.String(64)),
        sa.Column("review_state", sa.String(30), nullable=False),
        sa.Column("check_state", sa.String(20), nullable=False),
        sa.Column("checks", sa.JSON),
        sa.Column("followups", sa.Integer, nullable=False),
        sa.Column("waiting_reason", sa.Text),
        sa.Column("merged_by_user_id", sa.String(36)),
        sa.Column("merged_by", sa.String(500)),
        sa.Column("merged_at", TS),
        sa.Column("merge_method", sa.String(20)),
        sa.Column("issue_status_before", sa.String(30)),
        sa.Column("poll_state", sa.JSON),
        sa.Column("polled_at", TS),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("issue_id", "connection_id", "repo_path", "branch", name="uq_pull_request_branch"),
    )
    op.create_index("ix_pull_request_workspace_id", "pull_request", ["workspace_id"])
    op.create_index("ix_pull_request_issue_id", "pull_request", ["issue_id"])
    op.create_index("ix_pull_request_task_id", "pull_request", ["task_id"])
    op.create_index("ix_pull_request_connection_id", "pull_request", ["connection_id"])
    op.create_index("ix_pull_request_repo_number", "pull_request", ["connection_id", "repo_path", "number"])
    op.create_table(
        "forge_delivery",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("connection_id", sa.String(36), sa.ForeignKey("forge_connection.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("delivery_id", sa.String(200), nullable=False),
        sa.Column("event", sa.String(100)),
        sa.Column("received_at", TS, nullable=False),
        sa.UniqueConstraint("connection_id", "delivery_id", name="uq_forge_delivery"),
    )
    with op.batch_alter_table("project") as batch:
        batch.add_column(sa.Column("forge_policy", sa.JSON, nullable=True))
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("pull_request_id", sa.String(36), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.drop_column("pull_request_id")
    with op.batch_alter_table("project") as batch:
        batch.drop_column("forge_policy")
    op.drop_table("forge_delivery")
    op.drop_table("pull_request")
    op.drop_table("forge_connection")
