"""The /autopilots pages (issue 27 §5): the workspace's autopilots, and one autopilot with its
triggers, its state (paused, and why — also when it paused itself) and its firing history, through
the use cases `/api/autopilots` calls (service/autopilot_actions.py). Owners and admins get Pause,
Resume and Fire now; autopilots are made with `predictorx autopilot create` or the API."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import autopilot_actions as actions
from .forges import may_manage
from .forms import FORM_ERRORS, message_of, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, redirect
from .session import Viewer, viewer
from ..publicurl import public_base

router = APIRouter(route_class=PageRoute, include_in_schema=False)


@router.get("/autopilots")
async def autopilots_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    rows = await in_page_thread(actions.list_autopilots, request.app.state.px, who.workspace_id, public_base(request))
    return html("autopilots.html", {"viewer": who, "section": "autopilots", "rows": rows, "manage": may_manage(who)})


def _detail(request: Request, who: Viewer, autopilot_id: str, **extra: Any) -> dict[str, Any]:
    shown = actions.show(request.app.state.px, who.workspace_id, autopilot_id, public_base(request))
    return {"viewer": who, "section": "autopilots", "a": shown, "manage": may_manage(who), "error": None,
            "notice": None, **extra}


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
