"""The workspace's daemons, as a table, and a daemon's own page: its runtimes (the providers it
can run), the agents set to run on it, and the runs it holds now and ran last (agents: web/agents.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import agents as agent_svc
from ...service import daemons as daemon_svc
from ...service import members as member_svc
from ...service import runlists
from .machine import local_daemon_id
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html
from .runs import run_rows
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


def daemon_context(request: Request, who: Viewer, daemon_id: str) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        daemon = daemon_svc.get_daemon(s, who.workspace_id, daemon_id)
        runtimes = daemon_svc.runtimes_of(s, daemon.id)
        ids = {rt.id for rt in runtimes}
        agents = [a for a in agent_svc.list_agents(s, who.workspace_id) if a.runtime_id in ids]
        owner = next((u.name for _m, u in member_svc.list_members(s, who.workspace_id) if u.id == daemon.owner_id), None)
        current = run_rows(s, runlists.held_by_daemon(s, who.workspace_id, daemon.id))
        recent = run_rows(s, runlists.recent_on_daemon(s, who.workspace_id, daemon.id))
    return {"viewer": who, "section": "daemons", "daemon": daemon, "runtimes": runtimes, "agents": agents,
            "owner": owner, "online": daemon_svc.is_online(daemon), "here": daemon.id == local_daemon_id(),
            "current": current, "recent": recent}


@router.get("/daemons/{daemon_id}")
async def daemon_page(request: Request, daemon_id: str, who: Viewer = Depends(viewer)) -> Response:
    return html("daemon.html", await in_page_thread(daemon_context, request, who, daemon_id))
