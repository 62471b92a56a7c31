"""Settings → Forges: the workspace's forge connections (issue 22 §1) — list, add, edit, remove,
test, and a new webhook secret — through the same use cases as `/api/forges` (service/forge_actions.py).

Members see the list; owners and admins get the forms. The token field is write-only: the page
shows "set, ••••last4" and an empty field that, left empty, keeps the token. A webhook secret is
shown once, right after add or rotate, next to the URL to paste it with; no page shows it again.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...forges import registry
from ...service import forge_actions as actions
from ...service import forges as svc
from ..access import ROLE_RANK
from ..models import ForgeConnectionCreate, ForgeConnectionUpdate
from ..publicurl import public_base
from .forms import FORM_ERRORS, Form, read_form, message_of, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, is_htmx, panel
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def may_manage(who: Viewer) -> bool:
    return ROLE_RANK.get(who.caller.principal.role_in(who.workspace_id) or "", 0) >= ROLE_RANK["admin"]


def forges_context(request: Request, who: Viewer, **extra: Any) -> dict[str, Any]:
    rows = actions.list_connections(request.app.state.px, who.workspace_id, public_base(request))
    return {"viewer": who, "section": "forges", "rows": rows, "kinds": registry.known_kinds(),
            "manage": may_manage(who), "error": None, "error_for": None, "notice": None, "notice_for": None,
            "shown_secret": None, "values": {}, **extra}


async def _answer(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
    context = await in_page_thread(forges_context, request, who, **extra)
    if extra.get("shown_secret") and not is_htmx(request):  # a redirect would lose the one showing
        return html("forges.html", context)
    return panel(request, "_forges.html", context, page_url="/forges", status=status)


async def _refused(request: Request, who: Viewer, e: Exception, where: str) -> Response:
    """The panel with the refusal next to its row. A forge out of reach (502) or a key that does
    not open (503) is shown the same way, as a 4xx: htmx swaps in only 2xx and 4xx answers."""
    status = status_of(e)
    return await _answer(request, who, status=status if status < 500 else 422, error=message_of(e), error_for=where)


@router.get("/forges")
async def forges_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("forges.html", await in_page_thread(forges_context, request, who))


@router.post("/forges")
async def add(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    def work() -> dict:
        body = ForgeConnectionCreate(kind=form.get("kind"), name=form.get("name"), base_url=form.get("base_url"),
                                     api_url=form.optional("api_url"), credential=form.get("credential"),
                                     members_may_merge=form.get("members_may_merge") == "on")
        return actions.add_connection(request.app.state.px, who.workspace_id, who.caller.user_id, body.model_dump(),
                                      public_base(request), address=who.caller.address)
    try:
        made = await in_page_thread(work)
    except FORM_ERRORS as e:
        values = {k: v for k, v in form.values().items() if k != "credential"}  # never sent back to the browser
        return await _answer(request, who, status=status_of(e), error=message_of(e), error_for="new", values=values)
    return await _answer(request, who, shown_secret=made)


@router.post("/forges/{connection_id}")
async def edit(request: Request, connection_id: str, form: Form = Depends(read_form),
               who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        changes: dict[str, Any] = {"name": form.get("name"), "base_url": form.get("base_url"),
                                   "members_may_merge": form.get("members_may_merge") == "on"}
        if form.get("api_url"):
            changes["api_url"] = form.get("api_url")
        if form.get("credential"):  # empty: keep the token
            changes["credential"] = form.get("credential")
        actions.update_connection(request.app.state.px, who.workspace_id, connection_id,
                                  ForgeConnectionUpdate(**changes).model_dump(exclude_unset=True), public_base(request),
                                  actor_id=who.caller.user_id, address=who.caller.address)
    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        return await _refused(request, who, e, connection_id)
    return await _answer(request, who, notice="Saved.", notice_for=connection_id)


@router.post("/forges/{connection_id}/remove")
async def remove(request: Request, connection_id: str, who: Viewer = Depends(viewer)) -> Response:
    try:
        done = await in_page_thread(lambda: actions.remove_connection(
            request.app.state.px, who.workspace_id, connection_id, actor_id=who.caller.user_id,
            address=who.caller.address))
    except FORM_ERRORS as e:
        return await _refused(request, who, e, "list")
    return await _answer(request, who, notice=done["message"].capitalize() + ".", notice_for="list")


@router.post("/forges/{connection_id}/test")
async def test(request: Request, connection_id: str, who: Viewer = Depends(viewer)) -> Response:
    try:
        done = await in_page_thread(actions.check_connection, request.app.state.px, who.workspace_id, connection_id)
    except (svc.ForgeCallFailed, *FORM_ERRORS) as e:
        return await _refused(request, who, e, connection_id)
    return await _answer(request, who, notice=done["message"] + ".", notice_for=connection_id)


@router.post("/forges/{connection_id}/webhook-secret")
async def rotate_webhook_secret(request: Request, connection_id: str, who: Viewer = Depends(viewer)) -> Response:
    try:
        made = await in_page_thread(lambda: actions.rotate_webhook_secret(
            request.app.state.px, who.workspace_id, connection_id, public_base(request), actor_id=who.caller.user_id,
            address=who.caller.address))
    except FORM_ERRORS as e:
        return await _refused(request, who, e, connection_id)
    return await _answer(request, who, shown_secret=made)
