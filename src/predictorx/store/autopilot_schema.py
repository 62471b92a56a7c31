"""Autopilots (issue 27 §5): runs with no person at the keyboard — a runbook fired by a cron
schedule or a signed inbound webhook — and the history of their firings. Migration 0025 mirrors
this file."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .schema import TS, Base, new_id, utcnow


class Autopilot(Base):
    """A runbook (an issue template, optionally a workflow to start on the issue), who does it (an
    agent, or `role:<name>` resolved in the project at firing), and its triggers."""

    __tablename__ = "autopilot"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    #: The person who made it: the author of the issues it files, told when it pauses itself.
    owner_id: Mapped[str | None] = mapped_column(String(36))
    project_id: Mapped[str | None] = mapped_column(String(36))
    title_template: Mapped[str] = mapped_column(String(200))
    body_template: Mapped[str] = mapped_column(Text, default="")
    #: A process of the workflow library started on each issue it files (None: none).
    workflow: Mapped[str | None] = mapped_column(String(100))
    #: An agent's name or id, or "role:<role>" (the agent bound to that role in the project).
    assignee: Mapped[str | None] = mapped_column(String(200))
    cron: Mapped[str | None] = mapped_column(String(100))
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    #: The next due time of `cron` (UTC): what the scheduler compares with its clock.
    next_due_at: Mapped[datetime | None] = mapped_column(TS)
    #: The inbound webhook URL's own part (`/api/autopilot-hooks/<hook_id>`); None: no webhook.
    hook_id: Mapped[str | None] = mapped_column(String(64), unique=True)
    #: The webhook's signing secret, sealed (service/secretbox.py).
    hook_secret_sealed: Mapped[str | None] = mapped_column(Text)
    #: A delivery fires only if the payload's value at this dotted path equals `filter_value` (JSON).
    filter_path: Mapped[str | None] = mapped_column(String(200))
    filter_value: Mapped[str | None] = mapped_column(String(500))
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    pause_reason: Mapped[str | None] = mapped_column(String(500))
    paused_at: Mapped[datetime | None] = mapped_column(TS)
    #: Consecutive failed firings or runs after which it pauses itself.
    failure_limit: Mapped[int] = mapped_column(Integer, default=5)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (
        UniqueConstraint("workspace_id", "name", name="uq_autopilot_name"),
        Index("ix_autopilot_next_due_at", "next_due_at"),
    )


class AutopilotFiring(Base):
    """One firing. The row is also the claim: (autopilot, slot) is unique, so a due time ("cron:
    <UTC instant>") or a webhook delivery key fires once however many server replicas try."""

    __tablename__ = "autopilot_firing"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    autopilot_id: Mapped[str] = mapped_column(ForeignKey("autopilot.id", ondelete="CASCADE"))
    workspace_id: Mapped[str] = mapped_column(String(36))
    slot: Mapped[str] = mapped_column(String(220))
    trigger: Mapped[str] = mapped_column(String(16))  # cron | webhook | manual | replay
    due_at: Mapped[datetime | None] = mapped_column(TS)
    fired_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    issue_id: Mapped[str | None] = mapped_column(String(36))
    issue_number: Mapped[int | None] = mapped_column(Integer)
    task_id: Mapped[str | None] = mapped_column(String(36))
    #: running (its run goes on) | created (an issue, no run to follow) | succeeded | failed
    outcome: Mapped[str] = mapped_column(String(16))
    detail: Mapped[str | None] = mapped_column(String(500))
    #: A webhook's payload as received (bounded): what a replay fires with again.
    payload: Mapped[str | None] = mapped_column(Text)
    replay_of: Mapped[str | None] = mapped_column(String(36))

    __table_args__ = (
        UniqueConstraint("autopilot_id", "slot", name="uq_autopilot_firing_slot"),
        Index("ix_autopilot_firing_history", "autopilot_id", "fired_at"),
        Index("ix_autopilot_firing_outcome", "outcome"),
    )
