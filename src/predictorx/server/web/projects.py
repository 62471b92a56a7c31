"""The projects list with "New project" (R-WEB-3), and the project page that gathers the
Resources, Issues and Runs panels (R-WEB-1).

A new project is created in one POST with its repositories as `github_repo` resources, through
the API's own use case (service/project_actions.py): an invalid repository aborts the whole creation (R-RES-5) and the
form comes back with the server's message and everything typed still in it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import forgepolicy, next_step
from ...service import members as member_svc
from ...service import project_actions as actions
from ...service import projects as svc
from ...service import workspaces as ws_svc
from ..models import ForgePolicyPatch, ProjectCreate, ProjectUpdate, ResourceIn
from .forms import FORM_ERRORS, Form, FormError, message_of, read_form, status_of
from .issues import project_issues_context
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, is_htmx, panel, redirect
from .resources import resources_context
from .session import Viewer, viewer
from .tasks import project_tasks_context

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def list_context(request: Request, who: Viewer, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        projects = svc.list_projects(s, who.workspace_id)
        members = [user for _, user in member_svc.list_members(s, who.workspace_id)]
        repos = ws_svc.repos_of(s, who.workspace_id)
        counts = svc.project_counts(s, who.workspace_id)
        review = next_step.run_to_review(s, who.workspace_id)
    resources, open_issues, active = counts["resources"], counts["open_issues"], counts["active"]
    leads = {m.id: m.name for m in members}
    rows = [{"project": p, "lead": leads.get(p.lead_id or ""), "resources": resources.get(p.id, 0),
             "open_issues": open_issues.get(p.id, 0), "active": active.get(p.id, 0)} for p in projects]
    return {"viewer": who, "section": "projects", "rows": rows, "members": members, "workspace_repos": repos,
            "review": review,
            "statuses": svc.PROJECT_STATUSES, "priorities": svc.PRIORITIES, "error": None,
            "values": {"status": "planned", "priority": "none"}, "picked": [], "pasted": "", "open": False,
            **extra}


@router.get("/")
async def projects_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("projects.html", await in_page_thread(list_context, request, who))


def picked_repos(form: Form) -> list[str]:
    """Ticked workspace repositories and pasted URLs (one per line), in order, without repeats."""
    pasted = [line.strip() for line in form.get("repo_urls").splitlines() if line.strip()]
    return list(dict.fromkeys(form.getlist("repo") + pasted))


@router.post("/projects")
async def create_project(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    try:
        body = ProjectCreate(
            title=form.get("title"), description=form.get("description"),
            status=form.get("status") or "planned", priority=form.get("priority") or "none",
            lead_id=form.optional("lead_id"),
            resources=[ResourceIn(resource_type="github_repo", resource_ref={"url": url})
                       for url in picked_repos(form)])
        state = request.app.state.px
        made = await actions.create_project(state, state.hub, in_page_thread, who.workspace_id, who.caller.user_id,
                                            body.model_dump(exclude={"resources"}),
                                            [r.model_dump() for r in body.resources])
    except FORM_ERRORS as e:
        context = await in_page_thread(list_context, request, who, error=message_of(e), values=form.values(),
                                          picked=form.getlist("repo"), pasted=form.get("repo_urls"), open=True)
        return html("_project_form.html" if is_htmx(request) else "projects.html", context, status_of(e))
    return redirect(request, f"/projects/{made['id']}")


def head_context(request: Request, who: Viewer, project_id: str, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        project = svc.get_project(s, who.workspace_id, project_id)
        members = [user for _, user in member_svc.list_members(s, who.workspace_id)]
    lead = next((m.name for m in members if m.id == project.lead_id), None)
    return {"viewer": who, "project": project, "lead": lead, "members": members, "editing": False,
            "statuses": svc.PROJECT_STATUSES, "priorities": svc.PRIORITIES, "head_error": None,
            "values": {}, "policy": forgepolicy.policy_of(project), "on_merge_choices": forgepolicy.ON_MERGE,
            "policy_open": False, **extra}


def policy_from_form(form: Form) -> ForgePolicyPatch:
    """The Forge policy form: unticked boxes are false (the form always sends all five)."""
    try:
        followups = int(form.get("max_followups") or "0")
    except ValueError:
        raise FormError("automatic follow-ups must be a whole number from 0 to 20") from None
    return ForgePolicyPatch(auto_push=form.get("auto_push") == "on", auto_pr=form.get("auto_pr") == "on",
                            draft=form.get("draft") == "on", max_followups=followups,
                            on_merge=form.get("on_merge") or "done")


@router.get("/projects/{project_id}")
async def project_page(request: Request, project_id: str, who: Viewer = Depends(viewer)) -> Response:
    def build() -> dict[str, Any]:
        context = resources_context(request, who, project_id)
        context.update(head_context(request, who, project_id), section="projects",
                       issues=project_issues_context(request, who, project_id),
                       runs=project_tasks_context(request, who, project_id))
        return context
    return html("project.html", await in_page_thread(build))


@router.post("/projects/{project_id}/update")
async def update_project(request: Request, project_id: str, form: Form = Depends(read_form),
                         who: Viewer = Depends(viewer)) -> Response:
    """Status and priority from the header's selects; title, description and lead from its
    Edit form (which sends `form=edit`, so an emptied description or lead is a change too)."""
    changes: dict[str, Any] = {key: form.get(key) for key in ("status", "priority", "title") if form.get(key)}
    if form.get("form") == "edit":
        changes.update(description=form.get("description"), lead_id=form.get("lead_id"))
    extra: dict[str, Any] = {}
    status = 200
    try:
        if form.get("form") == "policy":
            changes["forge_policy"] = policy_from_form(form)
        await in_page_thread(actions.update_project, request.app.state.px, who.workspace_id, project_id,
                             ProjectUpdate(**changes).model_dump(exclude_unset=True))
    except FORM_ERRORS as e:
        extra, status = {"head_error": message_of(e), "editing": form.get("form") == "edit",
                         "policy_open": form.get("form") == "policy", "values": form.values()}, status_of(e)
    context = await in_page_thread(head_context, request, who, project_id, **extra)
    return panel(request, "_project_head.html", context, page_url=f"/projects/{project_id}", status=status)
