"""Editing one issue from its page (issue 26 §1, §4): each control saves its own field through the
API's use case (service/issues.py: `change_issue`, `assign_checked`), carrying the version it was
drawn at, so a change someone made meanwhile is shown instead of overwritten.

With JavaScript, static/edit.js sends the fields to the API (PATCH /api/issues/N, POST …/assign)
and keeps what the person chose when a save fails; these routes are the same controls as plain
forms, the live fragment open pages redraw their clean fields from, the Markdown preview, and
deleting an issue (owners and admins).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from ... import richtext
from ...service import issue_deletion
from ...service import issues as svc
from ..models import Assign, IssueUpdate
from .forms import FORM_ERRORS, Form, FormError, message_of, read_form, status_of
from .issues import fields_context, issue_context
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, panel, redirect
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)
TASKS_CHANGED = {"HX-Trigger": "px-tasks-changed"}
EDITABLE = ("title", "body", "status", "priority")


def _version(form: Form) -> int | None:
    raw = form.get("version")
    if not raw:
        return None
    if not raw.isdigit():
        raise FormError("the form's version is not a number; reload the page", status=400)
    return int(raw)


def live_context(request: Request, who: Viewer, ref: str) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        return fields_context(s, who, svc.get_issue(s, who.workspace_id, ref))


@router.get("/issues/{ref}/live")
async def live(request: Request, ref: str, edit: str | None = Query(default=None, max_length=10),
               who: Viewer = Depends(viewer)) -> Response:
    """The issue's fields as the page draws them: an open page redraws those the person is not
    editing when the issue changes (the event stream) or after a reconnect. `edit=body`: the
    description with its editor open, drawn at the version the edit starts from."""
    context = await in_page_thread(live_context, request, who, ref)
    return html("_issue_live.html", {**context, "edit": edit})


async def _field_answer(request: Request, who: Viewer, ref: str, error: Exception | None = None,
                        error_for: str | None = None, headers: dict[str, str] | None = None) -> Response:
    extra = {"error": message_of(error), "error_for": error_for} if error is not None else {}
    context = await in_page_thread(issue_context, request, who, ref, **extra)
    return panel(request, "_issue_meta.html", context, page_url=f"/issues/{ref}",
                 status=status_of(error) if error is not None else 200, headers=headers)


@router.post("/issues/{ref}/update")
async def update(request: Request, ref: str, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    """Title, description, status or priority as a plain form (what is given), with its version."""
    def work() -> None:
        changes = {key: form.get(key) for key in EDITABLE if key in form.values()}
        body = IssueUpdate(**changes, version=_version(form))
        with request.app.state.px.write() as s:
            svc.change_issue(s, who.caller.principal, who.workspace_id, ref,
                             body.model_dump(exclude_unset=True, exclude_none=True, exclude={"version"}),
                             body.version)
    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        return await _field_answer(request, who, ref, e, "update")
    return await _field_answer(request, who, ref)


@router.post("/issues/{ref}/assign")
async def assign(request: Request, ref: str, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        body = Assign(assignee=form.optional("assignee"), version=_version(form))
        with request.app.state.px.write() as s:
            svc.assign_checked(s, who.caller.principal, who.workspace_id, ref, body.assignee, body.version)
    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        return await _field_answer(request, who, ref, e, "assign")
    return await _field_answer(request, who, ref, headers=TASKS_CHANGED)


@router.post("/issues/{ref}/delete")
async def delete(request: Request, ref: str, who: Viewer = Depends(viewer)) -> Response:
    """Owners and admins, after the page's confirmation named what goes with the issue."""
    def work() -> None:
        with request.app.state.px.write() as s:
            issue_deletion.delete_issue(s, who.caller.principal, who.workspace_id, ref)
    await in_page_thread(work)  # a refusal is the error page, with its sentence
    return redirect(request, "/issues")


@router.post("/markdown/preview")
async def preview(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    """A description's Markdown as its page will show it (the same renderer, nothing stored)."""
    text = form.get("body")
    rendered = richtext.comment_html(text, []) if text else ""
    return html("_markdown_preview.html", {"rendered": rendered})
