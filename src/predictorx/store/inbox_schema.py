"""What needs a person and who hears about it (issue 27 §3–4): inbox items, issue subscriptions,
outbound notification channels, their deliveries and each delivery's attempts. Migration 0024
mirrors this file."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .schema import TS, Base, new_id, utcnow


class InboxItem(Base):
    """One thing that needs one person. `source_key` names the thing (a run's failure, an issue's
    review, a gate of a workflow instance …): it happening again raises the same item again (unread,
    newest) instead of adding a second one."""

    __tablename__ = "inbox_item"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"))
    #: run_failed | run_budget | assigned | review | step | gate | mention | comment | permission
    kind: Mapped[str] = mapped_column(String(20))
    state: Mapped[str] = mapped_column(String(10), default="unread")  # unread | read | done
    source_key: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(String(500))
    detail: Mapped[str] = mapped_column(String(1000), default="")
    #: Where it is on the web (a path of this server: /tasks/…, /issues/…).
    link: Mapped[str] = mapped_column(String(300), default="/")
    issue_id: Mapped[str | None] = mapped_column(String(36))
    task_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)

    __table_args__ = (
        UniqueConstraint("workspace_id", "user_id", "source_key", name="uq_inbox_item_source"),
        # a person's inbox, newest first, a page at a time; and its unread count
        Index("ix_inbox_item_person", "workspace_id", "user_id", "created_at", "id"),
        Index("ix_inbox_item_person_state", "workspace_id", "user_id", "state"),
    )


class IssueSubscription(Base):
    """Who hears about an issue. The author and an assigned person are subscribed when that
    happens (`reason`); `subscribed` false keeps a person's unsubscribe from being undone by that."""

    __tablename__ = "issue_subscription"
    issue_id: Mapped[str] = mapped_column(ForeignKey("issue.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    subscribed: Mapped[bool] = mapped_column(Boolean, default=True)
    reason: Mapped[str] = mapped_column(String(20), default="manual")  # author | assignee | manual
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class NotifyChannel(Base):
    """Where a person's (user_id set) or the workspace's (user_id None) notifications go: a signed
    webhook or an Apprise URL (Slack, Discord, ntfy, e-mail …). The URL and the signing secret are
    sealed (service/secretbox.py) and never shown again; `label` is what lists show."""

    __tablename__ = "notify_channel"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str | None] = mapped_column(String(36), index=True)
    kind: Mapped[str] = mapped_column(String(10))  # webhook | apprise
    name: Mapped[str] = mapped_column(String(100))
    label: Mapped[str] = mapped_column(String(300))
    url_sealed: Mapped[str] = mapped_column(Text)
    secret_sealed: Mapped[str | None] = mapped_column(Text)
    #: The inbox kinds it hears about.
    events: Mapped[list] = mapped_column(JSON, default=list)
    #: off: each at once; hourly / daily: one digest per hour or UTC day.
    digest: Mapped[str] = mapped_column(String(10), default="off")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_by: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class NotifyDelivery(Base):
    """One message to one channel. pending → sending (claimed by one server process until
    `claimed_until`) → delivered | failed (retries spent) | digested (folded into a digest row)."""

    __tablename__ = "notify_delivery"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    channel_id: Mapped[str] = mapped_column(ForeignKey("notify_channel.id", ondelete="CASCADE"), index=True)
    event: Mapped[str] = mapped_column(String(20))  # an inbox kind, "digest" or "test"
    payload: Mapped[dict] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(10), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    claimed_until: Mapped[datetime | None] = mapped_column(TS)
    last_status: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(String(500))
    redelivery_of: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(TS)

    __table_args__ = (Index("ix_notify_delivery_due", "status", "next_at"),)


class NotifyAttempt(Base):
    """The delivery log: each try, its HTTP status (or error) and the start of the answer."""

    __tablename__ = "notify_attempt"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    delivery_id: Mapped[str] = mapped_column(ForeignKey("notify_delivery.id", ondelete="CASCADE"), index=True)
    at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    ok: Mapped[bool] = mapped_column(Boolean, default=False)
    status_code: Mapped[int | None] = mapped_column(Integer)
    excerpt: Mapped[str] = mapped_column(String(500), default="")
    error: Mapped[str | None] = mapped_column(String(500))
    duration_ms: Mapped[int] = mapped_column(Integer, default=0)
