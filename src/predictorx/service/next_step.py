"""What a person should do next, for the first thing the web UI shows after sign-in (issue 26
§10): the latest finished run whose issue waits for a person's review — the demo's run on a fresh
install — with the step that comes next."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Issue, Task


@dataclass(frozen=True)
class RunToReview:
    task_id: str
    issue_number: int
    issue_title: str
    agent_name: str
    branch_name: str | None
    files: int | None


def run_to_review(session: Session, workspace_id: str) -> RunToReview | None:
    """The most recently finished completed run whose issue is in review (None: nothing waits)."""
    row = session.execute(
        select(Task.id, Task.branch_name, Task.review, Issue.number, Issue.title, Agent.name)
        .join(Issue, Issue.id == Task.issue_id).join(Agent, Agent.id == Task.agent_id)
        .where(Task.workspace_id == workspace_id, Task.status == "completed", Issue.status == "in_review")
        .order_by(Task.finished_at.desc()).limit(1)).first()
    if row is None:
        return None
    review = row.review or {}
    files = review.get("files")
    return RunToReview(row.id, row.number, row.title, row.name, row.branch_name,
                       len(files) if isinstance(files, list) else None)
