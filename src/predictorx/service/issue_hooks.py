"""What other parts of the platform do when an issue is filed or commented on.

The issue service calls these hooks inside the request's transaction, so whatever a hook writes
commits or rolls back with the issue. A part that cares (the workflow classifier,
service/classification.py, R-HAR-2) is registered on them at app start (`classification.register()`
in server/app.py), so the issue service does not import the workflow use cases.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from ..store.schema import Comment, Issue

IssueHook = Callable[[Session, Issue], None]
CommentHook = Callable[[Session, Issue, Comment], None]

_created: list[IssueHook] = []
_commented: list[CommentHook] = []


def when_issue_created(hook: IssueHook) -> IssueHook:
    """Run `hook(session, issue)` after each new issue is flushed (registering twice runs it once)."""
    if hook not in _created:
        _created.append(hook)
    return hook


def when_commented(hook: CommentHook) -> CommentHook:
    """Run `hook(session, issue, comment)` after each new comment is flushed."""
    if hook not in _commented:
        _commented.append(hook)
    return hook


def issue_created(session: Session, issue: Issue) -> None:
    for hook in tuple(_created):
        hook(session, issue)


def commented(session: Session, issue: Issue, comment: Comment) -> None:
    for hook in tuple(_commented):
        hook(session, issue, comment)
