"""The web UI: server-rendered pages (Jinja2) made live with htmx and the /api/events stream.

One module per page or panel; every router uses PageRoute so errors come back as pages.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from . import agents, folders, forges, issues, projects, pullrequests, resources, rooms, roster, session, tasks
from . import agentenv, agentpage, audit, autopilots, budgets, inbox, issue_edit, issuelist, labels, notifications, palette, runs, settings, sso, usage, workflows
from .assets import Static
from .pageroute import PageFallback
from .render import STATIC_DIR

router = APIRouter(include_in_schema=False)
for _module in (session, sso, projects, resources, folders, workflows, issuelist, labels, palette, issues, issue_edit, tasks,
                pullrequests, agents, rooms, roster, forges, agentenv, audit, usage, autopilots, settings, runs, agentpage, inbox,
                budgets, notifications):
    router.include_router(_module.router)


def mount_static(app: FastAPI) -> None:
    """Static files, then the HTML 404 for unknown pages (it must come after every route)."""
    app.mount("/static", Static(directory=STATIC_DIR), name="static")
    app.router.routes.append(PageFallback())
