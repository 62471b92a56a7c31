"""The Labels control of an issue page (issue 26 §3): the issue's labels, each with a button to
take it off, and a field to put one on (a new name makes the label). It loads itself into the
page (`_issue_labels.html`) and answers its own forms; the API's routes call the same service."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import issues as issue_svc
from ...service import labels as svc
from .forms import FORM_ERRORS, Form, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import panel
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def labels_context(request: Request, who: Viewer, ref: str, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        issue = issue_svc.get_issue(s, who.workspace_id, ref)
        return {"viewer": who, "issue": issue, "issue_labels": svc.labels_of(s, [issue.id])[issue.id],
                "all_labels": svc.list_labels(s, who.workspace_id), "label_error": None, **extra}


async def _answer(request: Request, who: Viewer, ref: str, status: int = 200, **extra: Any) -> Response:
    context = await in_page_thread(labels_context, request, who, ref, **extra)
    return panel(request, "_issue_labels.html", context, page_url=f"/issues/{ref}", status=status)


@router.get("/issues/{ref}/labels")
async def issue_labels(request: Request, ref: str, who: Viewer = Depends(viewer)) -> Response:
    return await _answer(request, who, ref)


async def _change(request: Request, who: Viewer, ref: str, form: Form, add: bool) -> Response:
    def work() -> None:
        with request.app.state.px.write() as s:
            issue = issue_svc.get_issue(s, who.workspace_id, ref)
            if add:
                svc.add_to_issue(s, issue, form.get("label"))
            else:
                svc.remove_from_issue(s, issue, form.get("label"))
    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        return await _answer(request, who, ref, status_of(e), label_error=message_of(e))
    return await _answer(request, who, ref)


@router.post("/issues/{ref}/labels")
async def add_label(request: Request, ref: str, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    return await _change(request, who, ref, form, add=True)


@router.post("/issues/{ref}/labels/remove")
async def remove_label(request: Request, ref: str, form: Form = Depends(read_form),
                       who: Viewer = Depends(viewer)) -> Response:
    return await _change(request, who, ref, form, add=False)
