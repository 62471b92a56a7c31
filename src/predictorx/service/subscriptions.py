"""Who hears about an issue (issue 27 §3): its author and an assigned person are subscribed when
that happens; anyone in the workspace subscribes or unsubscribes themselves. An unsubscribe is
kept (`subscribed` false), so being the author or the assignee again does not undo it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.inbox_schema import IssueSubscription
from ..store.schema import Issue, Member


def auto_subscribe(session: Session, issue: Issue, user_id: str | None, reason: str) -> None:
    """The author or the assignee, unless they unsubscribed (or are not a member: an agent)."""
    if not user_id or session.get(Member, (issue.workspace_id, user_id)) is None:
        return
    if session.get(IssueSubscription, (issue.id, user_id)) is None:
        session.add(IssueSubscription(issue_id=issue.id, user_id=user_id, workspace_id=issue.workspace_id,
                                      subscribed=True, reason=reason))
        session.flush()


def set_subscribed(session: Session, issue: Issue, user_id: str, subscribed: bool) -> dict:
    row = session.get(IssueSubscription, (issue.id, user_id))
    if row is None:
        row = IssueSubscription(issue_id=issue.id, user_id=user_id, workspace_id=issue.workspace_id,
                                subscribed=subscribed, reason="manual")
        session.add(row)
    else:
        row.subscribed, row.reason = subscribed, "manual"
    session.flush()
    return describe(row, issue)


def of(session: Session, issue: Issue, user_id: str) -> dict:
    row = session.get(IssueSubscription, (issue.id, user_id))
    return describe(row, issue)


def describe(row: IssueSubscription | None, issue: Issue) -> dict:
    return {"issue": issue.number, "subscribed": bool(row and row.subscribed),
            "reason": row.reason if row is not None else None}


def subscribers(session: Session, issue_id: str) -> list[str]:
    return list(session.scalars(select(IssueSubscription.user_id).where(IssueSubscription.issue_id == issue_id,
                                                                       IssueSubscription.subscribed.is_(True))))
