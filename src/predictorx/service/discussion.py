"""An issue's comments as its page shows them: the latest first, a page at a time, each page
bounded in bytes of stored HTML (issue 29 §5) — a discussion of any length, with comments of any
size, is a page of at most PAGE_BYTES plus one comment (itself at most richtext.HTML_MAX_BYTES).

The raw bodies are never loaded for a page; a comment whose body was too long to render carries
its length, so the page can offer its raw text (`raw_body`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from .. import richtext
from ..store.schema import Comment, Issue
from .errors import NotFound

#: Comments a page shows at most, and the stored HTML it carries at most (bytes, about).
PAGE_COMMENTS = 30
PAGE_BYTES = 300_000


@dataclass(frozen=True)
class ShownComment:
    id: str
    author_type: str
    author_id: str | None
    created_at: datetime
    html: str
    #: the raw body's length when it is too long to show formatted (a "show raw" link), else None
    raw_chars: int | None


@dataclass(frozen=True)
class CommentPage:
    comments: list[ShownComment]  # oldest first, as read
    earlier: int  # comments before the first shown
    total: int


def _before(session: Session, issue: Issue, comment_id: str):
    """Comments older than `comment_id` (by time, then id), which must be on `issue`."""
    anchor = session.execute(select(Comment.issue_id, Comment.created_at).where(Comment.id == comment_id)).first()
    if anchor is None or anchor.issue_id != issue.id:
        raise NotFound("that comment is not on this issue")
    return or_(Comment.created_at < anchor.created_at,
               and_(Comment.created_at == anchor.created_at, Comment.id < comment_id))


def _count(session: Session, issue: Issue, *where) -> int:
    return session.scalar(select(func.count()).select_from(Comment).where(Comment.issue_id == issue.id, *where)) or 0


def comment_page(session: Session, issue: Issue, before_id: str | None = None) -> CommentPage:
    """The latest comments (or the latest before comment `before_id`) that fit one page."""
    where = [Comment.issue_id == issue.id]
    if before_id is not None:
        where.append(_before(session, issue, before_id))
    size = func.coalesce(func.length(Comment.body_html), richtext.PREVIEW_CHARS)
    sizes = session.execute(select(Comment.id, size).where(*where)
                            .order_by(Comment.created_at.desc(), Comment.id.desc()).limit(PAGE_COMMENTS)).all()
    ids, used = [], 0
    for id_, n in sizes:
        if ids and used + n > PAGE_BYTES:
            break
        ids.append(id_)
        used += n
    if not ids:
        return CommentPage([], 0, _count(session, issue))
    rows = session.execute(select(Comment.id, Comment.author_type, Comment.author_id, Comment.created_at,
                                  Comment.body_html, func.length(Comment.body),
                                  func.substr(Comment.body, 1, richtext.PREVIEW_CHARS))
                           .where(Comment.id.in_(ids))).all()
    shown = sorted((_shown(*row) for row in rows), key=lambda c: (c.created_at, c.id))
    return CommentPage(shown, _count(session, issue, _before(session, issue, shown[0].id)), _count(session, issue))


def _shown(id_: str, author_type: str, author_id: str | None, created_at: datetime, html: str | None,
           chars: int, head: str) -> ShownComment:
    """A comment stored before body_html existed and not backfilled shows its plain start."""
    html = html if html is not None else richtext.preview(head)
    return ShownComment(id_, author_type, author_id, created_at, html, chars if richtext.is_preview(html) else None)


def raw_body(session: Session, issue: Issue, comment_id: str) -> str:
    body = session.scalar(select(Comment.body).where(Comment.id == comment_id, Comment.issue_id == issue.id))
    if body is None:
        raise NotFound("that comment is not on this issue")
    return body


def comments_after(session: Session, issue: Issue, after_id: str | None) -> list[ShownComment]:
    """The comments after `after_id` (all from the first without it), oldest first, a page at
    most: what an open issue page has not shown yet (live updates, catching up after a reconnect)."""
    where = [Comment.issue_id == issue.id]
    if after_id:
        anchor = session.execute(select(Comment.issue_id, Comment.created_at).where(Comment.id == after_id)).first()
        if anchor is None or anchor.issue_id != issue.id:
            raise NotFound("that comment is not on this issue")
        where.append(or_(Comment.created_at > anchor.created_at,
                         and_(Comment.created_at == anchor.created_at, Comment.id > after_id)))
    rows = session.execute(select(Comment.id, Comment.author_type, Comment.author_id, Comment.created_at,
                                  Comment.body_html, func.length(Comment.body),
                                  func.substr(Comment.body, 1, richtext.PREVIEW_CHARS))
                           .where(*where).order_by(Comment.created_at, Comment.id).limit(PAGE_COMMENTS)).all()
    return [_shown(*row) for row in rows]
