"""Settings → Audit log (issue 28 §4): the workspace's events for owners and admins, filtered and
paged, and how long they are kept — which the owners change here, through the same use cases as
`/api/audit` and `/api/audit/retention` (service/audit.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from ...service import audit
from .forms import FORM_ERRORS, Form, FormError, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, redirect
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def _role(who: Viewer) -> str | None:
    return who.caller.principal.role_in(who.workspace_id)


def audit_context(request: Request, who: Viewer, *, before: int | None = None, actor: str = "", action: str = "",
                  **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        rows, more = audit.page(s, who.workspace_id, role=_role(who), actor=actor or None,
                                action=action or None, before=before, limit=100)
        return {"viewer": who, "section": "audit", "events": [audit.describe(r) for r in rows],
                "next_before": more, "actor": actor, "action": action, "owner": _role(who) == "owner",
                "retention": audit.retention_of(s, who.workspace_id), "error": None, **extra}


@router.get("/audit")
async def audit_page(request: Request, before: int | None = Query(default=None, ge=1, le=2**62),
                     actor: str | None = Query(default=None, max_length=500),
                     action: str | None = Query(default=None, max_length=60),
                     who: Viewer = Depends(viewer)) -> Response:
    return html("audit.html", await in_page_thread(audit_context, request, who, before=before,
                                                   actor=actor or "", action=action or ""))


def _days(form: Form) -> int | None:
    """The form's choice: the server's default (None), for ever (0) or a number of days."""
    if form.get("keep") == "server":
        return None
    if form.get("keep") == "forever":
        return 0
    try:
        return int(form.get("days"))
    except ValueError:
        raise FormError("give the number of days as a whole number, e.g. 90") from None


@router.post("/audit/retention")
async def set_retention(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        days = _days(form)
        with request.app.state.px.write() as s:
            audit.set_retention(s, who.workspace_id, days, role=_role(who), actor_id=who.caller.user_id,
                                address=who.caller.address)
    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        context = await in_page_thread(audit_context, request, who, error=message_of(e))
        return html("audit.html", context, status=status_of(e))
    return redirect(request, "/audit")
