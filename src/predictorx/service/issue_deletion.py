"""Deleting an issue (issue 26 §4): owners and admins only, never while one of its runs is active,
and with a summary that says what goes with it — comments, runs and their messages, pull-request
records, workflows — so the confirmation names it before anything is deleted."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from ..store.schema import Comment, Issue, PullRequest, Task
from ..store.workflow_schema import WorkflowInstance
from . import audit
from .auth import Principal
from .errors import Conflict, Forbidden
from .issues import get_issue


def _count(session: Session, column: Any, issue_id: str) -> int:
    return session.scalar(select(func.count()).where(column == issue_id)) or 0


def deletion_summary(session: Session, issue: Issue) -> dict[str, int]:
    """How many of each thing deleting this issue deletes with it."""
    return {"comments": _count(session, Comment.issue_id, issue.id),
            "runs": _count(session, Task.issue_id, issue.id),
            "pull_requests": _count(session, PullRequest.issue_id, issue.id),
            "workflows": _count(session, WorkflowInstance.issue_id, issue.id)}


def describe_summary(summary: dict[str, int]) -> str:
    """"3 comments, 1 run and its messages" — what goes with the issue, in words."""
    words = {"comments": ("comment", "comments"), "runs": ("run and its messages", "runs and their messages"),
             "pull_requests": ("pull-request record", "pull-request records"),
             "workflows": ("workflow", "workflows")}
    parts = [f"{n} {words[k][0] if n == 1 else words[k][1]}" for k, n in summary.items() if n]
    if not parts:
        return "nothing else (no comments, runs or workflows)"
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def may_delete(principal: Principal, workspace_id: str) -> bool:
    return principal.is_user and principal.role_in(workspace_id) in ("owner", "admin")


def delete_issue(session: Session, principal: Principal, workspace_id: str, ref: str | int) -> dict[str, Any]:
    """Delete the issue and everything that belongs to it (the database cascades); what was
    deleted comes back in words. A run still queued or running must be cancelled first."""
    if not may_delete(principal, workspace_id):
        raise Forbidden("only a workspace owner or admin deletes issues")
    issue = get_issue(session, workspace_id, ref)
    if session.scalar(select(func.count()).where(Task.issue_id == issue.id, Task.active_key.is_not(None))):
        raise Conflict(f"issue #{issue.number} has a run queued or in progress; cancel it first, then delete the issue")
    summary = deletion_summary(session, issue)
    number, title = issue.number, issue.title
    audit.record(session, workspace_id=workspace_id, actor_id=principal.user_id, action="issue.delete",
                 target=f"#{number} {title}", detail={"number": number, **summary})
    session.execute(delete(Issue).where(Issue.id == issue.id))
    session.expunge(issue)
    return {"number": number, "title": title, "deleted": summary, "what": describe_summary(summary)}
