"""A project's agents-room room, read-only (issue 13 §4): who is in it (live), recent messages in
threads, active leases — when the room store is on this server's machine (the local `up`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import projects as project_svc
from ...service import rooms as svc
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def room_context(request: Request, who: Viewer, project_id: str) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        project = project_svc.get_project(s, who.workspace_id, project_id)
        title = project.title
    return {"viewer": who, "section": "projects", "project": project,
            "room": svc.project_room_view(project.id, title)}


@router.get("/projects/{project_id}/room")
async def room_page(request: Request, project_id: str, who: Viewer = Depends(viewer)) -> Response:
    return html("room.html", await in_page_thread(room_context, request, who, project_id))


@router.get("/projects/{project_id}/room/live")
async def room_live(request: Request, project_id: str, who: Viewer = Depends(viewer)) -> Response:
    return html("_room.html", await in_page_thread(room_context, request, who, project_id))
