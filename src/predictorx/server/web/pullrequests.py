"""The pull-request panel on the task and issue pages (issue 22 §4, §6): state (open, draft,
merged, closed), review state, checks with links, why it waits for a person; "Open pull
request", "Merge" (with the repository's methods), "Discard", "Ask the agent again".

The panel is loaded into the page and re-fetched when /api/events names the task (every PR
change is announced with its last task, service/pullrequests.announce). Its buttons call the
same use cases as the API (service/prflow.py).
"""

from __future__ import annotations

from typing import Any, Callable

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import issues as issue_svc
from ...service import prflow
from ...service import pullrequests as prs
from ...service import tasks as task_svc
from .forms import FORM_ERRORS, Form, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def task_panel_context(request: Request, who: Viewer, task_id: str, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        task = task_svc.get_task(s, who.workspace_id, task_id)
        pr = prs.of_task(s, task)
        return {"task": task, "rows": [prflow.panel_row(s, pr)] if pr is not None else [], "panel_url": f"/tasks/{task.id}/pr",
                "can_open": pr is None and task.status == "completed" and bool(task.branch_name),
                "error": None, **extra}


def issue_panel_context(request: Request, who: Viewer, ref: str, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        issue = issue_svc.get_issue(s, who.workspace_id, ref)
        rows = [prflow.panel_row(s, pr) for pr in prs.for_issue(s, issue.id)]
        return {"task": None, "rows": rows, "panel_url": f"/issues/{issue.number}/pr", "can_open": False,
                "error": None, **extra}


def _actor(who: Viewer) -> prs.Actor:
    return prs.Actor(who.caller.user_id, who.user_name, who.caller.principal.role_in(who.workspace_id),
                     who.caller.address)


@router.get("/tasks/{task_id}/pr")
async def task_panel(request: Request, task_id: str, who: Viewer = Depends(viewer)) -> Response:
    return html("_pull_request.html", await in_page_thread(task_panel_context, request, who, task_id))


@router.get("/issues/{ref}/pr")
async def issue_panel(request: Request, ref: str, who: Viewer = Depends(viewer)) -> Response:
    return html("_pull_request.html", await in_page_thread(issue_panel_context, request, who, ref))


async def _act(request: Request, who: Viewer, form: Form, work: Callable[[], Any]) -> Response:
    """Run one action, then answer the panel it came from (its URL is the form's `panel`)."""
    extra: dict[str, Any] = {}
    status = 200
    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        extra, status = {"error": message_of(e)}, status_of(e)
    back = form.get("panel")
    if back.startswith("/issues/"):
        context = await in_page_thread(issue_panel_context, request, who, back.split("/")[2], **extra)
    else:
        task_id = back.split("/")[2] if back.startswith("/tasks/") else form.get("task")
        context = await in_page_thread(task_panel_context, request, who, task_id, **extra)
    return html("_pull_request.html", context, status)


@router.post("/tasks/{task_id}/pr")
async def open_pr(request: Request, task_id: str, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    base = str(request.base_url).rstrip("/")
    return await _act(request, who, form, lambda: prflow.open_for_task(request.app.state.px, who.workspace_id,
                                                                       task_id, prs.public_url() or base))


@router.post("/pull-requests/{pr_id}/merge")
async def merge(request: Request, pr_id: str, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    method = form.optional("method")
    return await _act(request, who, form, lambda: prflow.merge_pr(request.app.state.px, who.workspace_id, pr_id,
                                                                  _actor(who), method))


@router.post("/pull-requests/{pr_id}/discard")
async def discard(request: Request, pr_id: str, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    return await _act(request, who, form, lambda: prflow.discard_pr(request.app.state.px, who.workspace_id, pr_id,
                                                                    _actor(who)))


@router.post("/pull-requests/{pr_id}/ask-again")
async def ask_again(request: Request, pr_id: str, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    text = form.optional("request")
    return await _act(request, who, form, lambda: prflow.ask_again(request.app.state.px, who.workspace_id, pr_id,
                                                                   who.caller.user_id, text))
