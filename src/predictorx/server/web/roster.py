"""The workspace's daemons, as a table (agents: web/agents.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import daemons as daemon_svc
from .machine import local_daemon_id
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def daemons_context(request: Request, who: Viewer) -> dict[str, Any]:
    here = local_daemon_id()
    with request.app.state.px.read() as s:
        rows = [{"daemon": d, "runtimes": daemon_svc.runtimes_of(s, d.id), "online": daemon_svc.is_online(d),
                 "here": d.id == here}
                for d in daemon_svc.list_daemons(s, who.workspace_id)]
    return {"viewer": who, "section": "daemons", "rows": rows}


@router.get("/daemons")
async def daemons_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("daemons.html", await in_page_thread(daemons_context, request, who))
