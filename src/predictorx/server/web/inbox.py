"""The inbox page (issue 27 §3): what needs the signed-in person — newest first, a page at a time
("Show more" brings the next), filtered open / unread / done / all, each item marked read, unread or
done — and the sidebar's unread count, live on pages that hold the event stream (static/inbox.js
refreshes them on `inbox_changed` for this person). Also the issue page's Subscribe button
(_subscribe.html). Through the use cases `/api/inbox` calls (service/inbox_actions.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from ...service import inbox_actions as actions
from ...service.inbox import FILTERS
from .forms import FORM_ERRORS, Form, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, is_htmx, redirect
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)
#: Items a page shows (the page stays under 100 KB with its scripts and styles; "Show more" brings more).
PAGE = 20


def _page(request: Request, who: Viewer, state: str, cursor: str | None) -> dict[str, Any]:
    found = actions.page(request.app.state.px, who.workspace_id, _person(who), state=state, cursor=cursor,
                         limit=PAGE, with_count=False)  # (the sidebar's count comes on its own)
    return {"viewer": who, "section": "inbox", "page": found, "state": state, "filters": FILTERS}


def _person(who: Viewer) -> str:
    return who.caller.user_id or ""  # (a signed-in page: a person's token, which always names its person)


@router.get("/inbox")
async def inbox_page(request: Request, state: str = Query(default="open", max_length=10),
                     who: Viewer = Depends(viewer)) -> Response:
    return html("inbox.html", await in_page_thread(_page, request, who, state, None))


@router.get("/inbox/items")
async def inbox_items(request: Request, state: str = Query(default="open", max_length=10),
                      cursor: str | None = Query(default=None, max_length=100),
                      who: Viewer = Depends(viewer)) -> Response:
    """The list (a live refresh), or the page after `cursor` ("Show more")."""
    return html("_inbox_items.html", await in_page_thread(_page, request, who, state, cursor))


@router.get("/inbox/count")
async def inbox_count(request: Request, who: Viewer = Depends(viewer)) -> Response:
    unread = await in_page_thread(actions.count, request.app.state.px, who.workspace_id, _person(who))
    return html("_inbox_count.html", {"unread": unread, "viewer": who})


@router.post("/inbox/mark-all")
async def mark_all(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    state = form.get("state") or "read"
    try:
        await in_page_thread(actions.mark_all, request.app.state.px, who.workspace_id, _person(who), state,
                             "read" if state == "done" and form.get("from") == "read" else "unread")
    except FORM_ERRORS as e:
        return html("error_fragment.html", {"message": message_of(e)}, status_of(e))
    return redirect(request, "/inbox")


@router.post("/inbox/{item_id}")
async def set_state(request: Request, item_id: str, form: Form = Depends(read_form),
                    who: Viewer = Depends(viewer)) -> Response:
    """Read, unread or done; htmx gets the item's new row (or nothing: done leaves an open list)."""
    try:
        item = await in_page_thread(actions.set_state, request.app.state.px, who.workspace_id, _person(who),
                                    item_id, form.get("state"))
    except FORM_ERRORS as e:
        return html("error_fragment.html", {"message": message_of(e)}, status_of(e))
    if not is_htmx(request):
        return redirect(request, "/inbox")
    shown = form.get("shown") or "open"
    if (shown == "open" and item["state"] == "done") or shown not in ("open", "all", item["state"]):
        return Response(status_code=200)  # it leaves this list
    return html("_inbox_item.html", {"item": item, "state": shown})


@router.get("/issues/{ref}/subscription")
async def subscription(request: Request, ref: str, who: Viewer = Depends(viewer)) -> Response:
    sub = await in_page_thread(actions.subscription, request.app.state.px, who.workspace_id, _person(who), ref)
    return html("_subscribe.html", {"sub": sub, "loaded": True})


@router.post("/issues/{ref}/subscription")
async def subscribe(request: Request, ref: str, form: Form = Depends(read_form),
                    who: Viewer = Depends(viewer)) -> Response:
    try:
        sub = await in_page_thread(actions.subscribe, request.app.state.px, who.workspace_id, _person(who),
                                   ref, form.get("subscribed") == "1")
    except FORM_ERRORS as e:
        return html("error_fragment.html", {"message": message_of(e)}, status_of(e))
    if not is_htmx(request):
        return redirect(request, f"/issues/{sub['issue']}")
    return html("_subscribe.html", {"sub": sub, "loaded": True})
