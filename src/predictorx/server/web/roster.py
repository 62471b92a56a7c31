"""The workspace's agents and daemons, as simple tables."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from sqlalchemy import func, select

from ...service import agents as agent_svc
from ...service import daemons as daemon_svc
from ...store.schema import ACTIVE_STATUSES, Daemon, Runtime, Task
from .machine import local_daemon_id
from .pageroute import PageRoute
from .render import html
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def agents_context(request: Request, who: Viewer) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        agents = agent_svc.list_agents(s, who.workspace_id)
        active = dict(s.execute(select(Task.agent_id, func.count())
                                .where(Task.workspace_id == who.workspace_id, Task.status.in_(ACTIVE_STATUSES))
                                .group_by(Task.agent_id)).all())
        runtimes = {rt.id: (rt, s.get(Daemon, rt.daemon_id))
                    for rt in s.scalars(select(Runtime).join(Daemon, Daemon.id == Runtime.daemon_id)
                                        .where(Daemon.workspace_id == who.workspace_id))}
    rows = []
    for a in agents:
        rt, daemon = runtimes.get(a.runtime_id or "", (None, None))
        rows.append({"agent": a, "active": active.get(a.id, 0),
                     "runs_on": f"{daemon.name} · {rt.provider}" if rt and daemon else "any daemon with " + a.provider})
    return {"viewer": who, "section": "agents", "rows": rows}


def daemons_context(request: Request, who: Viewer) -> dict[str, Any]:
    here = local_daemon_id()
    with request.app.state.px.read() as s:
        rows = [{"daemon": d, "runtimes": daemon_svc.runtimes_of(s, d.id), "online": daemon_svc.is_online(d),
                 "here": d.id == here}
                for d in daemon_svc.list_daemons(s, who.workspace_id)]
    return {"viewer": who, "section": "daemons", "rows": rows}


@router.get("/agents")
async def agents_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("agents.html", await run_in_threadpool(agents_context, request, who))


@router.get("/daemons")
async def daemons_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("daemons.html", await run_in_threadpool(daemons_context, request, who))
