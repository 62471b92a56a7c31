"""The issue page's Workflows panel (R-HAR-3…7 on the web): each instance with its current
steps drawn on the diagram, the history with verdicts, the interaction state, beans and the last
handoff. Read-only: people act through the CLI (`predictorx workflow …`), agents through MCP."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from markupsafe import Markup

from ...harness import beans as bean_svc
from ...harness import classification, diagram, handoff, instances, interaction
from ...harness.library import active_library
from ...harness.loader import DiagramError
from ...service import issues as issue_svc
from .pageroute import PageRoute
from .render import html, is_htmx
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def workflows_context(request: Request, who: Viewer, ref: str) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        issue = issue_svc.get_issue(s, who.workspace_id, ref)
        try:
            lib, problem = active_library(), None
        except DiagramError as e:
            lib, problem = None, str(e)
        items = []
        for inst in instances.list_instances(s, issue):
            hist = instances.history(s, inst)
            enabled = instances.enabled_steps(lib, inst) if lib and inst.status == "running" else []
            model = lib.model_of(inst.process_id) if lib else None
            drawing = Markup(diagram.svg(model, {e["node"] for e in enabled},
                                         {h.node_id for h in hist if h.status == "done"})) if model else None
            items.append({"inst": inst, "enabled": enabled, "history": hist, "svg": drawing})
        states = interaction.states_of(s, issue)
        handoffs = handoff.for_issue(s, issue.id, limit=1)
        return {"issue": issue, "items": items, "problem": problem,
                "classifications": [classification.as_dict(c) for c in classification.list_for(s, issue)],
                "states": states, "beans": bean_svc.list_beans(s, issue),
                "handoff": handoffs[0].content if handoffs else None}


@router.get("/issues/{ref}/workflows")
async def workflows_panel(request: Request, ref: str, who: Viewer = Depends(viewer)) -> Response:
    context = await run_in_threadpool(workflows_context, request, who, ref)
    if is_htmx(request):
        return html("_workflows.html", context)
    return html("standalone.html", {**context, "viewer": who, "section": "issues",
                                    "panel_template": "_workflows.html", "back_url": f"/issues/{ref}"})
