"""Labels (issue 26 §3): a workspace's named, coloured labels and which issues carry them.
Migration 0026 mirrors this file; the full-text index beside it is store/fulltext.py."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .schema import TS, Base, new_id, utcnow


class Label(Base):
    __tablename__ = "label"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(50))
    #: "#rrggbb", lower case: the chip's colour.
    color: Mapped[str] = mapped_column(String(7))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (UniqueConstraint("workspace_id", "name", name="uq_label_name"),)


class IssueLabel(Base):
    __tablename__ = "issue_label"
    issue_id: Mapped[str] = mapped_column(ForeignKey("issue.id", ondelete="CASCADE"), primary_key=True)
    label_id: Mapped[str] = mapped_column(ForeignKey("label.id", ondelete="CASCADE"), primary_key=True)

    __table_args__ = (Index("ix_issue_label_label_id", "label_id", "issue_id"),)
