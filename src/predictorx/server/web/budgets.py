"""Settings → Budgets (issue 27 §2 from the web): the workspace's budgets with what they spent, and
for owners and admins a form to set one (or change the limit of the same one) and a Remove button —
through the use cases `/api/budgets` and `predictorx budget` call (service/usage_actions.py), audited
as they are."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import usage_actions as actions
from ..access import ROLE_RANK
from ..models import BudgetIn
from .forms import FORM_ERRORS, Form, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, panel
from .session import Viewer, viewer
from .usage import money

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def may_manage(who: Viewer) -> bool:
    return ROLE_RANK.get(who.caller.principal.role_in(who.workspace_id) or "", 0) >= ROLE_RANK["admin"]


def budgets_context(request: Request, who: Viewer, **extra: Any) -> dict[str, Any]:
    return {"viewer": who, "section": "budgets", "budgets": actions.list_budgets(request.app.state.px, who.workspace_id),
            "manage": may_manage(who), "money": money, "error": None, "notice": None, "values": {}, **extra}


async def _answer(request: Request, who: Viewer, status: int = 200, **extra: Any) -> Response:
    context = await in_page_thread(budgets_context, request, who, **extra)
    return panel(request, "_budgets.html", context, page_url="/budgets", status=status)


@router.get("/budgets")
async def budgets_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("budgets.html", await in_page_thread(budgets_context, request, who))


@router.post("/budgets")
async def set_budget(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    def work() -> dict:
        body = BudgetIn.model_validate({"scope": form.get("scope") or "workspace", "target": form.optional("target"),
                                        "period": form.get("period") or "day", "metric": form.get("metric") or "cost",
                                        "limit": form.get("limit"), "action": form.get("action") or "warn"})
        return actions.set_budget(request.app.state.px, who.workspace_id, who.caller.user_id, body.model_dump(),
                                  address=who.caller.address)
    try:
        made = await in_page_thread(work)
    except FORM_ERRORS as e:
        return await _answer(request, who, status_of(e), error=message_of(e), values=form.values())
    return await _answer(request, who, notice=f"Set: {made['title']}." if made.get("title") else "Set.")


@router.post("/budgets/{budget_id}/remove")
async def remove_budget(request: Request, budget_id: str, who: Viewer = Depends(viewer)) -> Response:
    try:
        await in_page_thread(lambda: actions.remove_budget(request.app.state.px, who.workspace_id, budget_id,
                                                           user_id=who.caller.user_id, address=who.caller.address))
    except FORM_ERRORS as e:
        return await _answer(request, who, status_of(e), error=message_of(e))
    return await _answer(request, who, notice="Removed.")
