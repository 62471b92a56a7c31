"""What runs cost and the limits on it (issue 27 §1–2): one usage row per run, budgets, and a
workspace's own model prices. Migration 0023 mirrors this file."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .schema import TS, Base, new_id, utcnow


class RunUsage(Base):
    """A run's (task's) usage: what its CLI reported, kept up to date while it runs. Who and what
    it belongs to is copied in when the row is made, so a rollup reads this table alone."""

    __tablename__ = "run_usage"
    task_id: Mapped[str] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    #: The UTC day the run started (YYYY-MM-DD): the rollups' and budgets' period.
    day: Mapped[str] = mapped_column(String(10))
    project_id: Mapped[str | None] = mapped_column(String(36))
    agent_id: Mapped[str] = mapped_column(String(36))
    issue_id: Mapped[str] = mapped_column(String(36))
    #: The person the run was for: the issue's author.
    person_id: Mapped[str | None] = mapped_column(String(36))
    model: Mapped[str | None] = mapped_column(String(200))
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cache_read_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cache_write_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    reasoning_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    #: input + output + cache read + cache write: what a token budget counts.
    total_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    #: Millionths of a US dollar; None: unknown (no figure from the CLI, no price for the model).
    cost_micros: Mapped[int | None] = mapped_column(BigInteger)
    #: Where the cost came from: "cli", "override" (the workspace's price), "table" (genai-prices).
    cost_source: Mapped[str | None] = mapped_column(String(16))
    #: The run has ended: these are its final figures.
    final: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)

    __table_args__ = (
        # Every rollup and budget reads one workspace's rows over a span of days.
        Index("ix_run_usage_ws_day", "workspace_id", "day"),
    )


class UsageDay(Base):
    """The runs of one UTC day summed per agent, project, issue, person and model (and "all"), kept
    up to date as each run's usage is recorded (service/usage.py): a rollup over months reads a
    few rows per day and key, not every run. Clustered on its key on SQLite (WITHOUT ROWID), in
    (dimension, key, day) order: a rollup of one dimension reads it in key order, grouping as it goes."""

    __tablename__ = "usage_day"
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), primary_key=True)
    dim: Mapped[str] = mapped_column(String(8), primary_key=True)  # agent | project | issue | person | model | all
    key: Mapped[str] = mapped_column(String(200), primary_key=True)  # the id (model name); "" for none
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    runs: Mapped[int] = mapped_column(Integer, default=0)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cache_read_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cache_write_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    total_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cost_micros: Mapped[int] = mapped_column(BigInteger, default=0)  # of the runs whose cost is known
    unknown_cost_runs: Mapped[int] = mapped_column(Integer, default=0)

    __table_args__ = {"sqlite_with_rowid": False}


class Budget(Base):
    """A limit on a workspace's, project's or agent's spend per day or month, in money or tokens:
    "warn" says so, "stop" holds new runs queued and stops running ones."""

    __tablename__ = "budget"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), index=True)
    scope: Mapped[str] = mapped_column(String(16))  # workspace | project | agent
    scope_id: Mapped[str | None] = mapped_column(String(36))
    period: Mapped[str] = mapped_column(String(8))  # day | month
    metric: Mapped[str] = mapped_column(String(8))  # cost | tokens
    #: Millionths of a dollar (cost) or tokens.
    limit_value: Mapped[int] = mapped_column(BigInteger)
    action: Mapped[str] = mapped_column(String(8))  # warn | stop
    created_by: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class ModelPrice(Base):
    """A workspace's own price of a model (negotiated, or a local model's): it wins over the CLI's
    figure and the price table. Millionths of a dollar per million tokens."""

    __tablename__ = "model_price"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    model: Mapped[str] = mapped_column(String(200))
    input_micros: Mapped[int] = mapped_column(BigInteger)
    output_micros: Mapped[int] = mapped_column(BigInteger)
    cache_read_micros: Mapped[int | None] = mapped_column(BigInteger)
    cache_write_micros: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (UniqueConstraint("workspace_id", "model", name="uq_model_price"),)
