"""The workspace's Runs page (issue 26 §6): every run, newest first, filtered to running, waiting
or failed ones, a page at a time, with its agent, issue, status, how long it took and what it
cost where the run reported it. The agent and daemon pages list their runs with the same rows."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ...service import runlists
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html
from .session import Viewer, viewer
from .tasks import task_rows

router = APIRouter(route_class=PageRoute, include_in_schema=False)
FILTERS = (("all", "All"), ("running", "Running"), ("waiting", "Waiting"), ("failed", "Failed"))


def duration(started: datetime | None, finished: datetime | None) -> str:
    """'4 min 10 s' from start to end (to now while running); '' before it started."""
    if started is None:
        return ""
    end = finished or datetime.now(timezone.utc)
    if started.tzinfo is None:
        started = started.replace(tzinfo=timezone.utc)
    if end.tzinfo is None:
        end = end.replace(tzinfo=timezone.utc)
    seconds = max(0, int((end - started).total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def run_rows(s: Session, tasks: list) -> list[dict[str, Any]]:
    rows = task_rows(s, tasks)
    for row in rows:
        t = row["task"]
        row["duration"] = duration(t.started_at, t.finished_at)
    return rows


def runs_context(request: Request, who: Viewer, state: str, page: int) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        found = runlists.page_of_runs(s, who.workspace_id, state=state, page=page)
        rows = run_rows(s, found.tasks)
    return {"viewer": who, "section": "runs", "rows": rows, "state": state, "filters": FILTERS,
            "page": found.page, "more": found.more}


@router.get("/runs")
async def runs_page(request: Request, state: str = Query(default="all", max_length=20),
                    page: int = Query(default=1, ge=1, le=runlists.MAX_PAGE),
                    who: Viewer = Depends(viewer)) -> Response:
    return html("runs.html", await in_page_thread(runs_context, request, who, state, page))
