"""Tasks on pages: the live task lists of a project and an issue, and a run's details page
(status, wait and failure reasons, branch, cancel, the agent's messages in order).

Lists and the run header are re-fetched when /api/events says a task changed; messages are
fetched incrementally (`?after=<seq>`) when it says new ones arrived (see static/px.js).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ...service import daemons as daemon_svc
from ...service import permissions, runnability
from ...service import issues as issue_svc
from ...service import projects as project_svc
from ...service import tasks as svc
from ...service import usage as usage_svc
from ...service.errors import NotFound
from . import diffview
from .forms import FORM_ERRORS, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, panel, redirect
from .session import Viewer, viewer

if TYPE_CHECKING:  # annotations only: routes and pages reach the database through the services
    from ...store.schema import Agent, Issue, Task

router = APIRouter(route_class=PageRoute, include_in_schema=False)
MESSAGES_PER_PAGE = 5000
#: The task page opens on the latest messages; earlier ones load on request, a batch at a time,
#: so a run with thousands of messages still paints at once and the page stays small (bench/web.py).
FIRST_MESSAGES = 50
#: A project page lists its latest runs (each issue's page lists all of its own).
PROJECT_RUNS = 10
EARLIER_MESSAGES = 100


def task_rows(s: Session, tasks: list[Task]) -> list[dict[str, Any]]:
    agents: dict[str, Agent | None] = {}
    issues: dict[str, Issue | None] = {}
    rows = []
    for t in tasks:
        if t.agent_id not in agents or t.issue_id not in issues:
            agents[t.agent_id], issues[t.issue_id] = svc.agent_and_issue(s, t)
        agent, issue = agents[t.agent_id], issues[t.issue_id]
        rows.append({"task": t, "agent": agent.name if agent else "(deleted agent)", "issue": issue,
                     "active": t.status in svc.ACTIVE_STATUSES,
                     "agent_archived": agent is not None and agent.archived_at is not None})
    used = usage_svc.of_tasks(s, [t.id for t in tasks])  # tokens and cost, where the run reported them
    for row, t in zip(rows, tasks):
        row["usage"] = used.get(t.id)
        # what a queued run waits for, computed now (issue 26 §2): a daemon may have gone since
        row["waiting"] = runnability.queued_reason(s, t, agents[t.agent_id]) if t.status == "queued" \
            else t.wait_reason
    return rows


def project_tasks_context(request: Request, who: Viewer, project_id: str) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        project = project_svc.get_project(s, who.workspace_id, project_id)
        rows = task_rows(s, svc.list_tasks(s, who.workspace_id, project_id=project.id, limit=PROJECT_RUNS))
    return {"rows": rows, "live_url": f"/projects/{project_id}/tasks", "show_issue": True,
            "empty": "No runs yet. Assign an issue to an agent to start one."}


def issue_runs_context(request: Request, who: Viewer, ref: str) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        issue = issue_svc.get_issue(s, who.workspace_id, ref)
        rows = task_rows(s, list(reversed(svc.list_for_issue(s, issue))))
    return {"rows": rows, "live_url": f"/issues/{issue.number}/runs", "show_issue": False,
            "empty": "No runs yet. Assign this issue to an agent to start one.", "total": usage_total(rows)}


def usage_total(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The runs' tokens and cost together (issue 27): None when none reported usage."""
    used = [r["usage"] for r in rows if r.get("usage")]
    if not used:
        return None
    known = [u["cost_usd"] for u in used if u["cost_usd"] is not None]
    return {"runs": len(used), "total_tokens": sum(u["total_tokens"] for u in used),
            "cost_usd": sum(known) if known else None, "unknown_cost_runs": len(used) - len(known)}


@router.get("/projects/{project_id}/tasks")
async def project_tasks(request: Request, project_id: str, who: Viewer = Depends(viewer)) -> Response:
    return html("_tasks.html", {"runs": await in_page_thread(project_tasks_context, request, who, project_id)})


@router.get("/issues/{ref}/runs")
async def issue_runs(request: Request, ref: str, who: Viewer = Depends(viewer)) -> Response:
    return html("_tasks.html", {"runs": await in_page_thread(issue_runs_context, request, who, ref)})


# -- one run ---------------------------------------------------------------------------------

def header_context(request: Request, who: Viewer, task_id: str, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        task = svc.get_task(s, who.workspace_id, task_id)
        row = task_rows(s, [task])[0]
        daemon = daemon_svc.find_daemon(s, who.workspace_id, task.daemon_id)
        project = project_svc.find_project(s, who.workspace_id, task.project_id)
        question = permissions.waiting_question(s, task) if row["active"] else None
        return {"viewer": who, **row, "project": project, "daemon": daemon,
                "daemon_online": daemon is not None and daemon_svc.is_online(daemon),
                "question": question, "error": None, **extra}


def messages_context(request: Request, who: Viewer, task_id: str, after: int) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        task = svc.get_task(s, who.workspace_id, task_id)
        messages = svc.list_messages(s, task, after, MESSAGES_PER_PAGE)
    return {"messages": messages, "task": task, "earlier": False}


def latest_context(request: Request, who: Viewer, task_id: str, before: int | None) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        task = svc.get_task(s, who.workspace_id, task_id)
        messages, more = svc.latest_messages(s, task, before, FIRST_MESSAGES if before is None else EARLIER_MESSAGES)
    return {"messages": messages, "task": task, "earlier": more}


def full_message_context(request: Request, who: Viewer, task_id: str, seq: int) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        task = svc.get_task(s, who.workspace_id, task_id)
        found = svc.list_messages(s, task, seq - 1, 1)
    if not found or found[0].seq != seq:
        raise NotFound(f"this run has no message {seq}")
    return {"message": found[0]}


def review_context(request: Request, who: Viewer, task_id: str, view: str) -> dict[str, Any]:
    """The agent's work: the task's review (sent by its daemon at the end) as a diff view."""
    with request.app.state.px.read() as s:
        task = svc.get_task(s, who.workspace_id, task_id)
        daemon = daemon_svc.find_daemon(s, who.workspace_id, task.daemon_id)
        review = task.review or None
        files = diffview.parse(review.get("patch") or "") if review else []
    return {"task": task, "review": review, "files": files, "view": "split" if view == "split" else "unified",
            "commands": diffview.commands(review) if review else [], "daemon": daemon,
            "active": task.status in svc.ACTIVE_STATUSES}


@router.get("/tasks/{task_id}")
async def task_page(request: Request, task_id: str, view: str = Query(default="unified", max_length=20),
                    who: Viewer = Depends(viewer)) -> Response:
    context = await in_page_thread(header_context, request, who, task_id)
    context.update(await in_page_thread(latest_context, request, who, task_id, None))
    context["review_view"] = await in_page_thread(review_context, request, who, task_id, view)
    return html("task.html", context)


@router.get("/tasks/{task_id}/review")
async def task_review(request: Request, task_id: str, view: str = Query(default="unified", max_length=20),
                      who: Viewer = Depends(viewer)) -> Response:
    return html("_review.html", {"review_view": await in_page_thread(review_context, request, who, task_id, view)})


@router.get("/tasks/{task_id}/messages/earlier")
async def earlier_messages(request: Request, task_id: str, before: int = Query(ge=0, le=2_000_000_000),
                           who: Viewer = Depends(viewer)) -> Response:
    context = await in_page_thread(latest_context, request, who, task_id, before)
    return html("_messages.html", {**context, "chunk": True})


@router.get("/tasks/{task_id}/messages/{seq}/full")
async def full_message(request: Request, task_id: str, seq: int = Path(ge=0, le=2_000_000_000),
                       who: Viewer = Depends(viewer)) -> Response:
    """All of a folded message (a long output or text), fetched when its fold is opened."""
    return html("_message_full.html", await in_page_thread(full_message_context, request, who, task_id, seq))


@router.get("/tasks/{task_id}/header")
async def task_header(request: Request, task_id: str, who: Viewer = Depends(viewer)) -> Response:
    return html("_task_header.html", await in_page_thread(header_context, request, who, task_id))


@router.get("/tasks/{task_id}/messages")
async def task_messages(request: Request, task_id: str, after: int = Query(default=-1, ge=-1, le=2_000_000_000),
                        who: Viewer = Depends(viewer)) -> Response:
    return html("_messages.html", await in_page_thread(messages_context, request, who, task_id, after))


def _cancel(request: Request, who: Viewer, task_id: str) -> None:
    with request.app.state.px.write() as s:
        svc.cancel(s, svc.get_task(s, who.workspace_id, task_id))


@router.post("/tasks/{task_id}/cancel")
async def cancel(request: Request, task_id: str, who: Viewer = Depends(viewer)) -> Response:
    extra: dict[str, Any] = {}
    status = 200
    try:
        await in_page_thread(_cancel, request, who, task_id)
    except FORM_ERRORS as e:
        extra, status = {"error": message_of(e)}, status_of(e)
    context = await in_page_thread(header_context, request, who, task_id, **extra)
    return panel(request, "_task_header.html", context, page_url=f"/tasks/{task_id}", status=status)


def _answer(request: Request, who: Viewer, task_id: str, option_id: str, request_id: str) -> None:
    with request.app.state.px.write() as s:
        permissions.answer(s, svc.get_task(s, who.workspace_id, task_id, for_update=True), option_id,
                           who.caller.user_id, request_id or None)


@router.post("/tasks/{task_id}/answer")
async def answer(request: Request, task_id: str, who: Viewer = Depends(viewer)) -> Response:
    """A person picks one of the options of the question the run's agent waits on (`ask`):
    the same use case as `POST /api/tasks/{id}/answer` and `predictorx task answer`."""
    extra: dict[str, Any] = {}
    status = 200
    try:
        form = await read_form(request)
        await in_page_thread(_answer, request, who, task_id, form.get("option_id"), form.get("request_id"))
    except FORM_ERRORS as e:
        extra, status = {"error": message_of(e)}, status_of(e)
    context = await in_page_thread(header_context, request, who, task_id, **extra)
    return panel(request, "_task_header.html", context, page_url=f"/tasks/{task_id}", status=status)


def waiting_context(request: Request, who: Viewer) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        waiting = permissions.waiting_runs(s, who.workspace_id)
        rows = task_rows(s, [t for t, _ in waiting])
    return {"viewer": who, "section": "waiting",
            "waiting": [{**row, "question": q} for row, (_, q) in zip(rows, waiting, strict=True)]}


@router.get("/waiting")
async def waiting_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    """Runs whose agents wait on a person's answer (the `ask` permission policy), oldest first."""
    return html("waiting.html", await in_page_thread(waiting_context, request, who))


@router.get("/waiting/list")
async def waiting_list(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("_waiting.html", await in_page_thread(waiting_context, request, who))


@router.post("/tasks/{task_id}/rerun")
async def rerun(request: Request, task_id: str, who: Viewer = Depends(viewer)) -> Response:
    def work() -> str:
        with request.app.state.px.write() as s:
            return svc.rerun(s, svc.get_task(s, who.workspace_id, task_id)).id
    return redirect(request, f"/tasks/{await in_page_thread(work)}")
