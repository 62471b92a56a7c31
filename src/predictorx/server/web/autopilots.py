"""The /autopilots pages (issue 27 §5): the workspace's autopilots, and one autopilot with its
triggers, its state (paused, and why — also when it paused itself) and its firing history, through
the use cases `/api/autopilots` calls (service/autopilot_actions.py). Owners and admins get a form
that makes one (the API's request model and use case: errors next to the form, what was typed kept;
a webhook's signing secret shown once, on the new autopilot's page), and Pause, Resume, Fire now."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import autopilot_actions as actions
from .forges import may_manage
from ...service.autopilots import ROLE_PREFIX
from ..models import AutopilotIn, AutopilotScheduleIn
from .forms import FORM_ERRORS, Form, FormError, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, redirect
from .session import Viewer, viewer
from ..publicurl import public_base

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def _list(request: Request, who: Viewer, **extra: Any) -> dict[str, Any]:
    px, manage = request.app.state.px, may_manage(who)
    return {"viewer": who, "section": "autopilots", "manage": manage,
            "rows": actions.list_autopilots(px, who.workspace_id, public_base(request)),
            "choices": actions.choices(px, who.workspace_id) if manage else None,
            "error": None, "values": {"timezone": "UTC"}, **extra}


@router.get("/autopilots")
async def autopilots_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("autopilots.html", await in_page_thread(_list, request, who))


def _fields(form: Form) -> dict[str, Any]:
    """The form as the API's request body (`predictorx autopilot create` maps --role the same way)."""
    agent, role = form.optional("assignee"), form.optional("role")
    if agent and role:
        raise FormError("give an agent or a role as the assignee, not both")
    limit = form.optional("failure_limit")
    return {"name": form.get("name"), "title": form.get("title"), "description": form.get("description"),
            "assignee": f"{ROLE_PREFIX}{role}" if role else agent, "project": form.optional("project"),
            "workflow": form.optional("workflow"), "cron": form.optional("cron"),
            "timezone": form.optional("timezone") or "UTC", "webhook": form.get("webhook") == "on",
            "filter": form.optional("filter"), **({"failure_limit": limit} if limit else {})}


@router.post("/autopilots")
async def create(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    def work() -> dict[str, Any]:
        body = AutopilotIn.model_validate(_fields(form))
        return actions.create(request.app.state.px, who.workspace_id, who.caller.user_id, body.model_dump(),
                              public_base(request), address=who.caller.address,
                              now=request.app.state.autopilot_scheduler.clock.now())

    try:
        made = await in_page_thread(work)
    except FORM_ERRORS as e:
        context = await in_page_thread(_list, request, who, error=message_of(e), values=form.values())
        return html("autopilots.html", context, status_of(e))
    if made.get("signing_secret"):  # shown this once: on the new autopilot's page, not after a redirect
        context = await in_page_thread(_detail, request, who, made["id"], secret=made["signing_secret"])
        return html("autopilot.html", context)
    return redirect(request, f"/autopilots/{made['id']}")


def _detail(request: Request, who: Viewer, autopilot_id: str, **extra: Any) -> dict[str, Any]:
    shown = actions.show(request.app.state.px, who.workspace_id, autopilot_id, public_base(request))
    return {"viewer": who, "section": "autopilots", "a": shown, "manage": may_manage(who), "error": None,
            "notice": None, "secret": None, "schedule_error": None, "typed": None, **extra}


@router.get("/autopilots/{autopilot_id}")
async def autopilot_page(request: Request, autopilot_id: str, who: Viewer = Depends(viewer)) -> Response:
    return html("autopilot.html", await in_page_thread(_detail, request, who, autopilot_id))


async def _act(request: Request, who: Viewer, autopilot_id: str, action: Any, **clock: Any) -> Response:
    try:
        await in_page_thread(lambda: action(request.app.state.px, who.workspace_id, autopilot_id, who.caller.user_id,
                                            address=who.caller.address, **clock))
    except FORM_ERRORS as e:
        context = await in_page_thread(_detail, request, who, autopilot_id, error=message_of(e))
        return html("autopilot.html", context, status_of(e))
    return redirect(request, f"/autopilots/{autopilot_id}")


@router.post("/autopilots/{autopilot_id}/pause")
async def pause(request: Request, autopilot_id: str, who: Viewer = Depends(viewer)) -> Response:
    return await _act(request, who, autopilot_id, actions.pause)


@router.post("/autopilots/{autopilot_id}/resume")
async def resume(request: Request, autopilot_id: str, who: Viewer = Depends(viewer)) -> Response:
    return await _act(request, who, autopilot_id, actions.resume, now=request.app.state.autopilot_scheduler.clock.now())


@router.post("/autopilots/{autopilot_id}/fire")
async def fire(request: Request, autopilot_id: str, who: Viewer = Depends(viewer)) -> Response:
    return await _act(request, who, autopilot_id, actions.fire_now,
                      now=request.app.state.autopilot_scheduler.clock.now())


@router.post("/autopilots/{autopilot_id}/schedule")
async def reschedule(request: Request, autopilot_id: str, form: Form = Depends(read_form),
                     who: Viewer = Depends(viewer)) -> Response:
    """A new schedule from the autopilot's page (the API's request model and use case); a refusal is
    said next to the form, with what was typed kept."""
    def work() -> None:
        body = AutopilotScheduleIn.model_validate({"cron": form.get("cron"), "timezone": form.optional("timezone")})
        actions.reschedule(request.app.state.px, who.workspace_id, autopilot_id, who.caller.user_id, body.cron,
                           body.timezone, address=who.caller.address,
                           now=request.app.state.autopilot_scheduler.clock.now())

    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        context = await in_page_thread(_detail, request, who, autopilot_id, schedule_error=message_of(e),
                                       typed=form.values())
        return html("autopilot.html", context, status_of(e))
    return redirect(request, f"/autopilots/{autopilot_id}")

