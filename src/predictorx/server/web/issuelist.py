"""The workspace's issues as a list or a board (issue 26 §3): filters, full-text search, sort and
group, all in the URL (a saved view is its link; the API's `GET /api/issues` takes the same
parameters). A board per project is the board filtered by that project. Creating an issue from
the list and moving a card on the board answer with the same view.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ...service import issue_search as search
from ...service import issues as svc
from ...service import labels as label_svc
from ...service import members as member_svc
from ...service import projects as project_svc
from ...service.errors import ServiceError
from ..models import IssueUpdate
from .forms import FORM_ERRORS, Form, FormError, message_of, read_form, status_of
from .issues import _agents, _change, _create, _issue_rows
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, is_htmx, redirect
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)

#: Rows the list opens with, and how many more each "Show more" brings: a screenful, and the page
#: (with its filter bar) stays under the 100 KB budget.
LIST_ROWS = 25
#: Cards a column opens with, and how many more each "Show more" brings: a board of 1,000
#: issues stays a page of a few KB that paints at once (bench/web.py; issue 13 §7).
COLUMN_CARDS = 8
MORE_CARDS = 40
_FILTERS = ("status", "priority", "project", "assignee", "label")


def read_query(request: Request) -> search.IssueQuery:
    """The view the URL (or a board form's `view_query`) names; bad values are a 422 sentence."""
    params = request.query_params
    return search.IssueQuery.parse(**{k: params.getlist(k) for k in _FILTERS}, search=params.get("search"),
                                   sort=params.get("sort"), group=params.get("group"))


def _group_key(s: Session, q: search.IssueQuery, row: dict[str, Any]) -> str | None:
    i = row["issue"]
    if q.group == "status":
        return i.status.replace("_", " ").capitalize()
    if q.group == "priority":
        return "No priority" if i.priority == "none" else i.priority.capitalize()
    if q.group == "project":
        return row["project"].title if row["project"] else "No project"
    if q.group == "assignee":
        return row["assignee"] or "Unassigned"
    return None


def _rows(s: Session, found: list, q: search.IssueQuery) -> list[dict[str, Any]]:
    rows = _issue_rows(s, found)
    names = label_svc.labels_of(s, [r["issue"].id for r in rows])
    for r in rows:
        r["labels"] = names[r["issue"].id]
        r["group"] = _group_key(s, q, r)
    return rows


def _choices(s: Session, who: Viewer) -> dict[str, Any]:
    """What the filter bar offers: the workspace's projects, assignees and labels."""
    return {"projects": project_svc.list_projects(s, who.workspace_id, by_title=True),
            "agents": _agents(s, who.workspace_id),
            "members": [u for _, u in member_svc.list_members(s, who.workspace_id)],
            "labels": label_svc.list_labels(s, who.workspace_id)}


def _base(who: Viewer, q: search.IssueQuery, view: str) -> dict[str, Any]:
    return {"viewer": who, "section": "issues", "view": view, "q": q, "qs": q.query_string(),
            "statuses": svc.ISSUE_STATUSES, "priorities": project_svc.PRIORITIES, "sorts": search.SORTS,
            "groups": search.GROUPS, "error": None, "filter_error": None, "values": {}, "open": False,
            "board_project": None, "any_issues": True, "total": 0, "rows": []}


def list_context(request: Request, who: Viewer, q: search.IssueQuery, offset: int = 0, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        context = {**_base(who, q, "list"), **_choices(s, who), "rows": [], "next_offset": None, "total": 0}
        try:
            found_search = search.IssueSearch(s, who.workspace_id, q, who.caller.user_id)
            # One row before the page too: "Show more" continues a group without repeating its heading.
            start = max(0, offset - 1)
            found = found_search.rows(offset=start, limit=LIST_ROWS + 1 + (offset - start))
            rows = _rows(s, found, q)
            before, rows = (rows[:1], rows[1:]) if offset else ([], rows)
            context.update(rows=rows[:LIST_ROWS], total=found_search.count(),
                           prev_group=before[0]["group"] if before else None,
                           next_offset=offset + LIST_ROWS if len(rows) > LIST_ROWS else None)
        except ServiceError as e:
            context["filter_error"] = str(e)
        context["any_issues"] = bool(context["rows"]) or svc.count_issues(s, who.workspace_id) > 0
    return {**context, **extra}


def _column(found: search.IssueSearch, s: Session, q: search.IssueQuery, status: str, total: int,
            offset: int, limit: int) -> dict[str, Any]:
    at = svc.ISSUE_STATUSES.index(status)
    prev = svc.ISSUE_STATUSES[at - 1] if at > 0 else None
    nxt = svc.ISSUE_STATUSES[at + 1] if at + 1 < len(svc.ISSUE_STATUSES) else None
    rows = _rows(s, found.column(status, offset=offset, limit=limit), q)
    shown = offset + len(rows)
    return {"status": status, "prev": prev, "next": nxt, "total": total, "rows": rows, "shown": shown,
            "more": min(MORE_CARDS, max(0, total - shown))}


def board_context(request: Request, who: Viewer, q: search.IssueQuery, **extra: Any) -> dict[str, Any]:
    """The board: one column per status (those the view filters on, else all), its latest-changed
    cards first, each card with ← → buttons (keyboard) and draggable; more cards on request."""
    with request.app.state.px.read() as s:
        context = {**_base(who, q, "board"), **_choices(s, who), "columns": []}
        try:
            found = search.IssueSearch(s, who.workspace_id, q, who.caller.user_id)
            totals = found.status_counts()
            context["columns"] = [_column(found, s, q, st, totals.get(st, 0), 0, COLUMN_CARDS)
                                  for st in q.status or svc.ISSUE_STATUSES]
        except ServiceError as e:
            context["filter_error"] = str(e)
        one = [p for p in context["projects"] if list(q.project) == [p.id]]
        context["board_project"] = one[0] if one else None
    return {**context, **extra}


def more_cards_context(request: Request, who: Viewer, q: search.IssueQuery, status: str, offset: int) -> dict[str, Any]:
    if status not in svc.ISSUE_STATUSES:
        raise FormError(f"no board column {status!r}; the columns are {', '.join(svc.ISSUE_STATUSES)}", status=400)
    with request.app.state.px.read() as s:
        found = search.IssueSearch(s, who.workspace_id, q, who.caller.user_id)
        total = found.status_counts().get(status, 0)
        return {"col": _column(found, s, q, status, total, offset, MORE_CARDS), "qs": q.query_string()}


@router.get("/issues")
async def issues_page(request: Request, view: str = Query(default="list", max_length=10),
                      column: str | None = Query(default=None, max_length=20),
                      offset: int = Query(default=0, ge=0, le=1_000_000),
                      new: str | None = Query(default=None, max_length=5),
                      who: Viewer = Depends(viewer)) -> Response:
    try:
        q = read_query(request)
    except ServiceError as e:  # a hand-edited link: the page says what is wrong with it
        context = await in_page_thread(list_context, request, who, search.IssueQuery(), filter_error=str(e), rows=[])
        return html("issues.html", context, status_of(e))
    if column is not None:  # "Show more" of one board column: its next cards
        return html("_cards.html", await in_page_thread(more_cards_context, request, who, q, column, offset))
    if view == "board":
        return html("issues.html", await in_page_thread(board_context, request, who, q))
    context = await in_page_thread(list_context, request, who, q, offset, open=new is not None)
    if offset and is_htmx(request):  # "Show more" of the list: its next rows
        return html("_issue_rows.html", context)
    return html("issues.html", context, 422 if context["filter_error"] else 200)


def _move_target(form: Form) -> tuple[str, str]:
    """A board move: `m=<number> <status>` (a card's ← → button, or a card dropped on a column)."""
    number, _, status = form.get("m").partition(" ")
    if not number.isdigit() or status not in svc.ISSUE_STATUSES:
        raise FormError("choose the column (status) to move the issue to", status=400)
    return number, status


def _form_query(form: Form) -> search.IssueQuery:
    """The board's view, carried by its form (`view_query`), so a move answers the same board."""
    from urllib.parse import parse_qs

    raw = parse_qs(form.get("view_query")[:4000])

    def first(key: str) -> str | None:
        return next(iter(raw.get(key, [])), None)
    return search.IssueQuery.parse(**{k: raw.get(k, []) for k in _FILTERS}, search=first("search"),
                                   sort=first("sort"), group=first("group"))


@router.post("/issues/move")
async def move(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    """A card moved to another column, by its buttons (keyboard) or by dragging it. The board
    comes back with the moved card on top of its column and its button focused again."""
    number, status = _move_target(form)
    try:
        q = _form_query(form)
    except ServiceError as e:
        raise FormError(str(e), status=status_of(e)) from e

    def before() -> str:
        with request.app.state.px.read() as s:
            return svc.get_issue(s, who.workspace_id, number).status
    old = await in_page_thread(before)
    await in_page_thread(_change, request, who, number, IssueUpdate(status=status))
    if not is_htmx(request):
        qs = q.query_string()
        return redirect(request, f"/issues?view=board{'&' + qs if qs else ''}#c{number}")
    context = await in_page_thread(board_context, request, who, q)
    ahead = svc.ISSUE_STATUSES.index(status) >= svc.ISSUE_STATUSES.index(old)
    focus = {"card": f"c{number}", "button": "next" if ahead else "prev"}
    return html("_board.html", context, headers={"HX-Trigger-After-Settle": json.dumps({"px-focus": focus})})


@router.post("/issues")
async def create_issue(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    try:
        issue = await in_page_thread(_create, request, who, form, None)
    except FORM_ERRORS as e:
        context = await in_page_thread(list_context, request, who, search.IssueQuery(), error=message_of(e),
                                       values=form.values(), open=True)
        return html("_issue_form.html" if is_htmx(request) else "issues.html", context, status_of(e))
    return redirect(request, f"/issues/{issue.number}")
