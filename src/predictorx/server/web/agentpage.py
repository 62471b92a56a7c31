"""An agent's own page (issue 26 §6): what it is set to (provider, model, where it runs, the
sandbox and network, instructions, command), its owner, what it cost this month, and its runs —
status, duration and cost where the run reported it — a page at a time, filtered like /runs.
Editing stays on the Agents page (web/agents.py), one form for both."""

from __future__ import annotations

import shlex
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from ... import unconfined
from ...service import agents as svc
from ...service import daemons as daemon_svc
from ...service import members as member_svc
from ...service import runlists, usage_rollup
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html
from .runs import FILTERS, run_rows
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def agent_context(request: Request, who: Viewer, agent_id: str, state: str, page: int) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        agent = svc.find_agent(s, who.workspace_id, agent_id)
        runtime = next(((rt, d) for rt, d in svc.runtimes_by_provider(s, who.workspace_id)
                        if rt.id == agent.runtime_id), None)
        owner = next((u.name for _m, u in member_svc.list_members(s, who.workspace_id) if u.id == agent.owner_id), None)
        found = runlists.page_of_runs(s, who.workspace_id, state=state, agent_id=agent.id, page=page)
        rows = run_rows(s, found.tasks)
        month = usage_rollup.this_month_by_agent(s, who.workspace_id).get(agent.id)
        active = runlists.active_of_agent(s, agent.id)
        online = runtime is not None and daemon_svc.is_online(runtime[1])
    runs_on = (f"{runtime[1].name} · {runtime[0].provider}{' ' + runtime[0].version if runtime[0].version else ''}"
               if runtime else f"any daemon of its owner's with {agent.provider}")
    return {"viewer": who, "section": "agents", "agent": agent, "owner": owner, "runs_on": runs_on,
            "daemon": runtime[1] if runtime else None, "online": online, "month": month, "active": active,
            "command": shlex.join(agent.command) if agent.command else "", "unconfined_reach": unconfined.REACH,
            "rows": rows, "state": state, "filters": FILTERS, "page": found.page, "more": found.more}


@router.get("/agents/{agent_id}")
async def agent_page(request: Request, agent_id: str, state: str = Query(default="all", max_length=20),
                     page: int = Query(default=1, ge=1, le=runlists.MAX_PAGE),
                     who: Viewer = Depends(viewer)) -> Response:
    return html("agent.html", await in_page_thread(agent_context, request, who, agent_id, state, page))
