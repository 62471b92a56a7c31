"""System facts (workflows/facts.py), computed from the database at the moment of a gate's pass:
the issue's beans, the instance's age, and the state of the task's pull request where one is
known. One query per source, only for the facts the gate reads (bench/harness.py measures it on an
issue with 200 beans)."""

from __future__ import annotations

from datetime import timezone
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.schema import Issue, PullRequest, Task, utcnow
from ..store.workflow_schema import Bean, WorkflowInstance
from ..workflows.facts import SystemFacts

_BEAN_FACTS = {"open_beans", "beans_created", "beans_in_progress", "beans_total"}
_PR_FACTS = {"ci_state": "check_state", "review_state": "review_state", "pr_state": "state"}


def provider(session: Session, issue: Issue, inst: WorkflowInstance, task_id: str | None) -> SystemFacts:
    """The `system` callback the engine calls with the names a gate reads."""
    def compute(names: set[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if names & _BEAN_FACTS:
            counts = dict(session.execute(select(Bean.status, func.count()).where(Bean.issue_id == issue.id)
                                          .group_by(Bean.status)).all())
            out["open_beans"] = counts.get("created", 0) + counts.get("in-progress", 0)
            out["beans_created"] = counts.get("created", 0)
            out["beans_in_progress"] = counts.get("in-progress", 0)
            out["beans_total"] = sum(counts.values())
        if names & {"elapsed_seconds", "elapsed_hours"}:
            started = inst.created_at
            if started.tzinfo is None:
                started = started.replace(tzinfo=timezone.utc)
            seconds = max(0, int((utcnow() - started).total_seconds()))
            out["elapsed_seconds"], out["elapsed_hours"] = seconds, round(seconds / 3600, 3)
        if names & set(_PR_FACTS):
            pr = pull_request(session, issue, task_id)
            for fact, column in _PR_FACTS.items():
                out[fact] = getattr(pr, column) if pr is not None else None
        return {k: v for k, v in out.items() if k in names}
    return compute


def pull_request(session: Session, issue: Issue, task_id: str | None) -> PullRequest | None:
    """The task's pull request if it has one, else the issue's latest."""
    task = session.get(Task, task_id) if task_id else None
    if task is not None and task.pull_request_id:
        pr = session.get(PullRequest, task.pull_request_id)
        if pr is not None:
            return pr
    return session.scalars(select(PullRequest).where(PullRequest.issue_id == issue.id)
                           .order_by(PullRequest.created_at.desc()).limit(1)).first()
