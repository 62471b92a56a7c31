"""Issues on pages: the workspace's list, one issue (comments, assignee, runs), and the Issues
panel of a project page (create with an optional agent, assign an existing issue to an agent).

Assigning to an agent queues a task; the answer also fires `px-tasks-changed` so the run lists
refresh at once, before the event stream reports the new task.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse, Response
from sqlalchemy.orm import Session

from ... import richtext
from ...service import agents as agent_svc
from ...service import discussion, issue_deletion
from ...service import members as member_svc
from ...service import issues as svc
from ...service import projects as project_svc
from ..models import Assign, CommentIn, IssueCreate, IssueUpdate
from .forms import FORM_ERRORS, Form, FormError, message_of, read_form, read_long_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, is_htmx, panel, redirect
from .session import Viewer, viewer
from .tasks import issue_runs_context

if TYPE_CHECKING:  # annotations only: routes and pages reach the database through the services
    from ...store.schema import Issue, Project

router = APIRouter(route_class=PageRoute, include_in_schema=False)
TASKS_CHANGED = {"HX-Trigger": "px-tasks-changed"}


def _change(request: Request, who: Viewer, ref: str | int, body: IssueUpdate) -> None:
    """Status or priority changed from the board or the side panel: the API's own use case."""
    with request.app.state.px.write() as s:
        svc.change_issue(s, who.caller.principal, who.workspace_id, ref,
                         body.model_dump(exclude_unset=True, exclude_none=True))


def _issue_rows(s: Session, issues: list[Issue]) -> list[dict[str, Any]]:
    projects: dict[str, Project | None] = {}
    rows = []
    for i in issues:
        project = projects.setdefault(i.project_id, project_svc.find_project(s, i.workspace_id, i.project_id)) \
            if i.project_id else None
        rows.append({"issue": i, "assignee": svc.assignee_name(s, i), "project": project})
    return rows


def _agents(s: Session, workspace_id: str) -> list[Any]:
    return agent_svc.list_agents(s, workspace_id)


def _create(request: Request, who: Viewer, form: Form, project_id: str | None) -> Issue:
    body = IssueCreate(title=form.get("title"), body=form.get("body"), priority=form.get("priority") or "none",
                       project_id=project_id or form.optional("project_id"), assignee=form.optional("assignee"))
    with request.app.state.px.write() as s:
        return svc.create_issue(s, who.workspace_id, who.caller.user_id, **body.model_dump())


def _assign(request: Request, who: Viewer, ref: str, form: Form) -> None:
    body = Assign(assignee=form.optional("assignee"))
    with request.app.state.px.write() as s:
        svc.assign(s, svc.get_issue(s, who.workspace_id, ref), body.assignee)


# -- the workspace's issues -----------------------------------------------------------------

#: Rows the list opens with, and how many more each "Show more" brings (the page stays small).
LIST_ROWS = 30


def list_context(request: Request, who: Viewer, offset: int = 0, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        found = svc.list_issues(s, who.workspace_id, limit=LIST_ROWS + 1, offset=offset)
        rows = _issue_rows(s, found[:LIST_ROWS])
        projects = project_svc.list_projects(s, who.workspace_id, by_title=True)
        agents = _agents(s, who.workspace_id)
    return {"viewer": who, "section": "issues", "rows": rows, "projects": projects, "agents": agents,
            "priorities": project_svc.PRIORITIES, "error": None, "values": {}, "open": False, "view": "list",
            "next_offset": offset + LIST_ROWS if len(found) > LIST_ROWS else None, **extra}


#: Cards a column opens with, and how many more each "Show more" brings: a board of 1,000
#: issues stays a page of a few KB that paints at once (bench/web.py; issue 13 §7).
COLUMN_CARDS = 8
MORE_CARDS = 40


def _column(s: Session, who: Viewer, status: str, total: int, offset: int, limit: int) -> dict[str, Any]:
    at = svc.ISSUE_STATUSES.index(status)
    prev = svc.ISSUE_STATUSES[at - 1] if at > 0 else None
    nxt = svc.ISSUE_STATUSES[at + 1] if at + 1 < len(svc.ISSUE_STATUSES) else None
    rows = _issue_rows(s, svc.board_column(s, who.workspace_id, status, offset=offset, limit=limit))
    shown = offset + len(rows)
    return {"status": status, "prev": prev, "next": nxt, "total": total, "rows": rows, "shown": shown,
            "more": min(MORE_CARDS, max(0, total - shown))}


def board_context(request: Request, who: Viewer, **extra: Any) -> dict[str, Any]:
    """The board: one column per status, its latest-changed cards first, each card with ← →
    buttons (keyboard) and draggable (issue 13 §2); more cards of a column on request."""
    with request.app.state.px.read() as s:
        totals = svc.status_counts(s, who.workspace_id)
        columns = [_column(s, who, st, totals.get(st, 0), 0, COLUMN_CARDS) for st in svc.ISSUE_STATUSES]
        projects = project_svc.list_projects(s, who.workspace_id, by_title=True)
        agents = _agents(s, who.workspace_id)
    return {"viewer": who, "section": "issues", "view": "board", "columns": columns, "projects": projects,
            "agents": agents, "priorities": project_svc.PRIORITIES, "error": None, "values": {}, "open": False,
            **extra}


def more_cards_context(request: Request, who: Viewer, status: str, offset: int) -> dict[str, Any]:
    if status not in svc.ISSUE_STATUSES:
        raise FormError(f"no board column {status!r}; the columns are {', '.join(svc.ISSUE_STATUSES)}", status=400)
    with request.app.state.px.read() as s:
        total = svc.status_counts(s, who.workspace_id).get(status, 0)
        return {"col": _column(s, who, status, total, offset, MORE_CARDS)}


@router.get("/issues")
async def issues_page(request: Request, view: str = Query(default="list", max_length=10),
                      column: str | None = Query(default=None, max_length=20),
                      offset: int = Query(default=0, ge=0, le=1_000_000),
                      who: Viewer = Depends(viewer)) -> Response:
    if column is not None:  # "Show more" of one board column: its next cards
        return html("_cards.html", await in_page_thread(more_cards_context, request, who, column, offset))
    if view == "board":
        return html("issues.html", await in_page_thread(board_context, request, who))
    if offset and is_htmx(request):  # "Show more" of the list: its next rows
        return html("_issue_rows.html", await in_page_thread(list_context, request, who, offset))
    return html("issues.html", await in_page_thread(list_context, request, who, offset))


def _move_target(form: Form) -> tuple[str, str]:
    """A board move: `m=<number> <status>` (a card's ← → button, or a card dropped on a column)."""
    number, _, status = form.get("m").partition(" ")
    if not number.isdigit() or status not in svc.ISSUE_STATUSES:
        raise FormError("choose the column (status) to move the issue to", status=400)
    return number, status


@router.post("/issues/move")
async def move(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    """A card moved to another column, by its buttons (keyboard) or by dragging it. The board
    comes back with the moved card on top of its column and its button focused again."""
    number, status = _move_target(form)

    def before() -> str:
        with request.app.state.px.read() as s:
            return svc.get_issue(s, who.workspace_id, number).status
    old = await in_page_thread(before)
    await in_page_thread(_change, request, who, number, IssueUpdate(status=status))
    if not is_htmx(request):
        return redirect(request, f"/issues?view=board#c{number}")
    context = await in_page_thread(board_context, request, who)
    ahead = svc.ISSUE_STATUSES.index(status) >= svc.ISSUE_STATUSES.index(old)
    focus = {"card": f"c{number}", "button": "next" if ahead else "prev"}
    return html("_board.html", context, headers={"HX-Trigger-After-Settle": json.dumps({"px-focus": focus})})


@router.post("/issues")
async def create_issue(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    try:
        issue = await in_page_thread(_create, request, who, form, None)
    except FORM_ERRORS as e:
        context = await in_page_thread(list_context, request, who, error=message_of(e),
                                          values=form.values(), open=True)
        return html("_issue_form.html" if is_htmx(request) else "issues.html", context, status_of(e))
    return redirect(request, f"/issues/{issue.number}")


# -- one issue -------------------------------------------------------------------------------

#: Comments an issue page opens with at most (the latest; fewer when they are long: the page is
#: bounded in bytes, service/discussion.py); "Show earlier comments" brings the page before.
COMMENTS_SHOWN = discussion.PAGE_COMMENTS


def _comments(s: Session, issue: Issue, before: str | None) -> dict[str, Any]:
    page = discussion.comment_page(s, issue, before)
    authors = {author_id: _author(s, kind, author_id)  # each author once, however many comments
               for kind, author_id in {(c.author_type, c.author_id) for c in page.comments}}
    return {"comments": page.comments, "earlier_comments": page.earlier, "comment_total": page.total,
            "authors": authors}


def fields_context(s: Session, who: Viewer, issue: Issue) -> dict[str, Any]:
    """What the issue's editable fields show: each control carries the version it was drawn at."""
    return {"issue": issue, "statuses": svc.ISSUE_STATUSES, "priorities": project_svc.PRIORITIES,
            "assignee": svc.assignee_name(s, issue), "agents": _agents(s, who.workspace_id),
            "people": [user for _, user in member_svc.list_members(s, who.workspace_id)],
            "description_html": richtext.comment_html(issue.body, []) if issue.body else ""}


def issue_context(request: Request, who: Viewer, ref: str, before: str | None = None, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        issue = svc.get_issue(s, who.workspace_id, ref)
        project = project_svc.find_project(s, who.workspace_id, issue.project_id)
        may_delete = issue_deletion.may_delete(who.caller.principal, who.workspace_id)
        deletes = issue_deletion.describe_summary(issue_deletion.deletion_summary(s, issue)) if may_delete else ""
        return {"viewer": who, "section": "issues", "project": project, **fields_context(s, who, issue),
                "may_delete": may_delete, "deletes": deletes, "comment_max": COMMENT_MAX,
                **_comments(s, issue, before), "error": None, "error_for": None, "values": {}, **extra}


def earlier_comments_context(request: Request, who: Viewer, ref: str, before: str) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        issue = svc.get_issue(s, who.workspace_id, ref)
        return {"issue": issue, **_comments(s, issue, before)}


def newer_comments_context(request: Request, who: Viewer, ref: str, after: str | None) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        issue = svc.get_issue(s, who.workspace_id, ref)
        shown = discussion.comments_after(s, issue, after)
        authors = {c.author_id: _author(s, c.author_type, c.author_id) for c in shown}
        return {"issue": issue, "comments": shown, "earlier_comments": 0, "authors": authors}


def raw_comment(request: Request, who: Viewer, ref: str, comment_id: str) -> str:
    with request.app.state.px.read() as s:
        return discussion.raw_body(s, svc.get_issue(s, who.workspace_id, ref), comment_id)


def _author(s: Session, kind: str, author_id: str | None) -> str:
    return svc.author_name(s, kind, author_id)


@router.get("/issues/{ref}")
async def issue_page(request: Request, ref: str, before: str | None = Query(default=None, max_length=36),
                     who: Viewer = Depends(viewer)) -> Response:
    context = await in_page_thread(issue_context, request, who, ref, before)
    context["runs"] = await in_page_thread(issue_runs_context, request, who, ref)
    return html("issue.html", context)


@router.get("/issues/{ref}/comments")
async def earlier_comments(request: Request, ref: str, before: str | None = Query(default=None, max_length=36),
                           after: str | None = Query(default=None, max_length=36),
                           who: Viewer = Depends(viewer)) -> Response:
    """"Show earlier comments": the page of comments before `before`, as list items; without
    `before`, the comments after `after` (those an open page has not shown yet: live, catch-up)."""
    if before is None:
        return html("_comment_items.html", await in_page_thread(newer_comments_context, request, who, ref, after))
    return html("_comment_items.html", await in_page_thread(earlier_comments_context, request, who, ref, before))


@router.get("/issues/{ref}/comments/{comment_id}/raw")
async def comment_raw(request: Request, ref: str, comment_id: str, who: Viewer = Depends(viewer)) -> Response:
    """A comment too long to show formatted, as the plain text it was written as."""
    body = await in_page_thread(raw_comment, request, who, ref, comment_id)
    return PlainTextResponse(body, headers={"Content-Disposition": "inline"})


#: A comment's length at most (CommentIn's, the API's too).
COMMENT_MAX = 100_000


def comment_in(text: str) -> CommentIn:
    """The comment, or its length problem in words (a paste of megabytes is named, not echoed)."""
    if len(text) > COMMENT_MAX:
        raise FormError(f"Comments can be at most {COMMENT_MAX:,} characters; this one has {len(text):,}. "
                        "Shorten it, or attach the long part as a file in the repository.")
    if not text.strip():
        raise FormError("Write something first: the comment is empty.")
    return CommentIn(body=text)


@router.post("/issues/{ref}/comments")
async def add_comment(request: Request, ref: str, form: Form = Depends(read_long_form),
                      who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        body = comment_in(form.get("body"))
        with request.app.state.px.write() as s:
            issue = svc.get_issue(s, who.workspace_id, ref)
            svc.add_comment(s, issue, body=body.body, author_type="member", author_id=who.caller.user_id)
    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        # The text goes back into the box unless it is too long to be worth sending back.
        kept = form.values() if len(form.get("body")) <= COMMENT_MAX else {}
        context = await in_page_thread(issue_context, request, who, ref, error=message_of(e),
                                          error_for="comment", values=kept)
        return panel(request, "_comments.html", context, page_url=f"/issues/{ref}", status=status_of(e))
    context = await in_page_thread(issue_context, request, who, ref)
    # A comment that @mentions an agent may have queued a run: the runs list looks again.
    return panel(request, "_comments.html", context, page_url=f"/issues/{ref}", headers=TASKS_CHANGED)


# -- the Issues panel of a project page ------------------------------------------------------

#: Issue rows a project page opens with, and how many more each "Show more" brings.
PROJECT_ROWS = 10


def project_issues_context(request: Request, who: Viewer, project_id: str, offset: int = 0,
                           **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        project = project_svc.get_project(s, who.workspace_id, project_id)
        limit = PROJECT_ROWS if offset == 0 else 2 * PROJECT_ROWS
        found = svc.list_issues(s, who.workspace_id, project_id=project.id, limit=limit + 1, offset=offset)
        rows = _issue_rows(s, found[:limit])
        total = svc.count_issues(s, who.workspace_id, project_id=project.id)
        agents = _agents(s, who.workspace_id)
    return {"viewer": who, "project": project, "rows": rows, "agents": agents, "error": None, "total": total,
            "next_offset": offset + limit if len(found) > limit else None, "error_for": None, "values": {}, **extra}


async def _project_issues(request: Request, who: Viewer, project_id: str, *, status: int = 200,
                          headers: dict[str, str] | None = None, **extra: Any) -> Response:
    context = await in_page_thread(project_issues_context, request, who, project_id, **extra)
    return panel(request, "_project_issues.html", context, page_url=f"/projects/{project_id}",
                 status=status, headers=headers)


@router.get("/projects/{project_id}/issues")
async def project_issues(request: Request, project_id: str, offset: int = Query(default=0, ge=0, le=1_000_000),
                         who: Viewer = Depends(viewer)) -> Response:
    if offset:  # "Show more": the next rows
        context = await in_page_thread(project_issues_context, request, who, project_id, offset)
        return html("_project_issue_rows.html", context)
    return await _project_issues(request, who, project_id)


@router.post("/projects/{project_id}/issues")
async def create_project_issue(request: Request, project_id: str, form: Form = Depends(read_form),
                               who: Viewer = Depends(viewer)) -> Response:
    try:
        issue = await in_page_thread(_create, request, who, form, project_id)
    except FORM_ERRORS as e:
        return await _project_issues(request, who, project_id, status=status_of(e), error=message_of(e),
                                     error_for="create", values=form.values())
    return await _project_issues(request, who, project_id,
                                 headers=TASKS_CHANGED if issue.assignee_type == "agent" else None)


@router.post("/projects/{project_id}/issues/{ref}/assign")
async def assign_in_project(request: Request, project_id: str, ref: str, form: Form = Depends(read_form),
                            who: Viewer = Depends(viewer)) -> Response:
    try:
        await in_page_thread(_assign, request, who, ref, form)
    except FORM_ERRORS as e:
        return await _project_issues(request, who, project_id, status=status_of(e), error=message_of(e),
                                     error_for=ref)
    return await _project_issues(request, who, project_id, headers=TASKS_CHANGED)
