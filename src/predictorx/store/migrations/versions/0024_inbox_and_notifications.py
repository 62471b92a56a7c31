"""inbox_item (what needs a person), issue_subscription, notify_channel (outbound webhooks and
Apprise presets, sealed), notify_delivery (the queue of outbound messages) and notify_attempt (the
delivery log): issue 27 §3–4, store/inbox_schema.py

Revision ID: 0024
Revises: 0023
"""
import sqlalchemy as sa
from alembic import op

TS = sa.DateTime(timezone=True)

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def _ws() -> sa.Column:
    return sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "inbox_item",
        sa.Column("id", sa.String(36), primary_key=True),
        _ws(),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("user_account.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("source_key", sa.String(200), nullable=False),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("detail", sa.String(1000), nullable=False),
        sa.Column("link", sa.String(300), nullable=False),
        sa.Column("issue_id", sa.String(36), nullable=True),
        sa.Column("task_id", sa.String(36), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("workspace_id", "user_id", "source_key", name="uq_inbox_item_source"),
    )
    op.create_index("ix_inbox_item_person", "inbox_item", ["workspace_id", "user_id", "created_at", "id"])
    op.create_index("ix_inbox_item_person_state", "inbox_item", ["workspace_id", "user_id", "state"])
    op.create_table(
        "issue_subscription",
        sa.Column("issue_id", sa.String(36), sa.ForeignKey("issue.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("user_account.id", ondelete="CASCADE"), primary_key=True),
        _ws(),
        sa.Column("subscribed", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.String(20), nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "notify_channel",
        sa.Column("id", sa.String(36), primary_key=True),
        _ws(),
        sa.Column("user_id", sa.String(36), nullable=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("label", sa.String(300), nullable=False),
        sa.Column("url_sealed", sa.Text(), nullable=False),
        sa.Column("secret_sealed", sa.Text(), nullable=True),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("digest", sa.String(10), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_by", sa.String(36), nullable=True),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_notify_channel_workspace_id", "notify_channel", ["workspace_id"])
    op.create_index("ix_notify_channel_user_id", "notify_channel", ["user_id"])
    op.create_table(
        "notify_delivery",
        sa.Column("id", sa.String(36), primary_key=True),
        _ws(),
        sa.Column("channel_id", sa.String(36), sa.ForeignKey("notify_channel.id", ondelete="CASCADE"), nullable=False),
        sa.Column("event", sa.String(20), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_at", TS, nullable=False),
        sa.Column("claimed_until", TS, nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(500), nullable=True),
        sa.Column("redelivery_of", sa.String(36), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("delivered_at", TS, nullable=True),
    )
    op.create_index("ix_notify_delivery_channel_id", "notify_delivery", ["channel_id"])
    op.create_index("ix_notify_delivery_due", "notify_delivery", ["status", "next_at"])
    op.create_table(
        "notify_attempt",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("delivery_id", sa.String(36), sa.ForeignKey("notify_delivery.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("at", TS, nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("excerpt", sa.String(500), nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
    )
    op.create_index("ix_notify_attempt_delivery_id", "notify_attempt", ["delivery_id"])


def downgrade() -> None:
    for table in ("notify_attempt", "notify_delivery", "notify_channel", "issue_subscription", "inbox_item"):
        op.drop_table(table)
