"""The command palette's results (Ctrl-K; static/palette.js): issues, projects and agents that
match what was typed, as options of a listbox. The palette adds the pages and "Create issue"."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from ...service import quickfind
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


@router.get("/palette")
async def palette(request: Request, q: str = Query(default="", max_length=200), who: Viewer = Depends(viewer)) -> Response:
    def find() -> quickfind.Found:
        with request.app.state.px.read() as s:
            return quickfind.quick_find(s, who.workspace_id, q)
    return html("_palette.html", {"found": await in_page_thread(find), "q": q})
