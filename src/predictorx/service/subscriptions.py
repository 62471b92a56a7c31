"""Who hears about an issue (issue 27 §3): its author and an assigned person are subscribed when
that happens; anyone in the workspace subscribes or unsubscribes themselves. An unsubscribe is
kept (`subscribed` false), so being the author or the assignee again does not undo it."""

from __future__ import annotations

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from ..store.inbox_schema import IssueSubscription
from ..store.schema import Issue, Member


def auto_subscribe(session: Session, issue: Issue, user_id: str | None, reason: str) -> None:
    """The author or the assignee, unless they unsubscribed (or are not a member: an agent)."""
    if not user_id:
        return
    # Whether they are a member and whether they have a subscription row, in one statement (each
    # new issue asked both of its author, one after the other).
    member, subscribed = session.execute(select(
        exists().where(Member.workspace_id == issue.workspace_id, Member.user_id == user_id),
        exists().where(IssueSubscription.issue_id == issue.id, IssueSubscription.user_id == user_id))).one()
    if not member:
        return
    if not subscribed:
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


def subscribers_and_members(session: Session, issue: Issue) -> list[tuple[str, bool]]:
    """Each subscriber of `issue`, with whether they are a member of its workspace (one statement)."""
    return [(user_id, member is not None) for user_id, member in session.execute(
        select(IssueSubscription.user_id, Member.user_id)
        .outerjoin(Member, (Member.workspace_id == issue.workspace_id) & (Member.user_id == IssueSubscription.user_id))
        .where(IssueSubscription.issue_id == issue.id, IssueSubscription.subscribed.is_(True)))]
