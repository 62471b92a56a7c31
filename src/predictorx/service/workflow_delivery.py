"""A run's end with delivered commits (the daemon's finish): each running instance of its issue
with a commit-boundary step enabled (service/workflow_boundary.py) has its steps dispatched again,
so the agent's next task completes the step with the commit its run delivered."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Issue
from ..store.workflow_schema import WorkflowInstance
from ..workflows.library import active_library
from ..workflows.loader import DiagramError
from .workflow_dispatch import after_change
from .workflow_instances import enabled_steps


def after_delivery(session: Session, issue_id: str, status: str, review: dict[str, Any] | None) -> list[str]:
    """A run delivered commits: each running instance of its issue with a commit-boundary step
    enabled gets its steps dispatched again, so the agent's next task completes the step with the
    commit its run delivered (a step taken during the run is refused: its commits were not
    delivered yet)."""
    commits = (review or {}).get("commits") if status == "completed" else None
    if not commits:
        return []
    issue = session.get(Issue, issue_id)
    if issue is None:
        return []
    try:
        lib = active_library()
    except DiagramError:
        return []
    queued: list[str] = []
    for inst in session.scalars(select(WorkflowInstance).where(WorkflowInstance.issue_id == issue.id,
                                                               WorkflowInstance.status == "running")):
        if any(s.get("commit_boundary") for s in enabled_steps(lib, inst)):
            queued += after_change(session, lib, issue, inst)
    return queued
