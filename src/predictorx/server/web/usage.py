"""The usage page (issue 27 §1–2): what runs used and cost over a span of UTC days, summed by agent,
project, issue, person, model or day, a bar chart of each day's cost (inline SVG, no script), and
the workspace's budgets with what they have spent — through the use cases `/api/usage` and
`/api/budgets` call (service/usage_actions.py). Budgets and prices are set with `predictorx budget`
and `predictorx usage price` (or the API) by owners and admins."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from ...service import usage_actions as actions
from ...service.errors import Invalid
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)
BY = ("agent", "project", "issue", "person", "model", "day")
CHART_W, CHART_H = 720, 160
#: Rows of the table on the page (the costliest); the API and the CLI give up to 500.
PAGE_ROWS = 50


def money(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def chart(days: list[dict[str, Any]]) -> dict[str, Any]:
    """Bars of each day's cost (or tokens, when no cost is known at all), scaled to the highest."""
    metric = "cost_usd" if any(d["cost_usd"] for d in days) else "total_tokens"
    values = [float(d[metric] or 0) for d in days]
    top = max(values, default=0) or 1
    width = CHART_W / max(len(days), 1)
    bars = []
    for i, (day, value) in enumerate(zip(days, values)):
        h = round(value / top * (CHART_H - 20), 1)
        label = money(day["cost_usd"]) if metric == "cost_usd" else f"{int(value):,} tokens"
        bars.append({"x": round(i * width + 1, 1), "y": round(CHART_H - h, 1), "w": round(max(width - 2, 1), 1),
                     "h": h, "title": f"{day['key']}: {label}, {day['runs']} runs"})
    return {"bars": bars, "width": CHART_W, "height": CHART_H,
            "metric": "cost (USD)" if metric == "cost_usd" else "tokens",
            "top": money(top) if metric == "cost_usd" else f"{int(top):,} tokens",
            "first": days[0]["key"] if days else None, "last": days[-1]["key"] if days else None}


def usage_context(request: Request, who: Viewer, by: str, since: str | None, until: str | None) -> dict[str, Any]:
    tx = request.app.state.px
    if by not in BY:
        raise Invalid(f"by is one of {', '.join(BY)}")
    report = actions.report(tx, who.workspace_id, by=by, since=since, until=until,
                            limit=10_000 if by == "day" else PAGE_ROWS)
    daily = report if by == "day" else actions.report(tx, who.workspace_id, by="day", since=report["since"],
                                                      until=until)
    shown = report["rows"]
    return {"viewer": who, "section": "usage", "report": report, "shown": shown, "by": by, "choices": BY, "page_rows": PAGE_ROWS,
            "chart": chart(daily["rows"]), "budgets": actions.list_budgets(tx, who.workspace_id),
            "prices": actions.list_prices(tx, who.workspace_id), "money": money}


@router.get("/usage")
async def usage_page(request: Request, by: str = Query(default="agent", max_length=20),
                     since: str | None = Query(default=None, max_length=10),
                     until: str | None = Query(default=None, max_length=10),
                     who: Viewer = Depends(viewer)) -> Response:
    return html("usage.html", await in_page_thread(usage_context, request, who, by, since or None, until or None))
