"""Settings → Notifications (issue 27 §4): your channels and the workspace's — signed webhooks and
Apprise presets (Slack, Discord, ntfy, e-mail …) — with the events each hears about and the quiet
digest; a test message; each channel's delivery log with redelivery. Through the use cases
`/api/notifications/…` call (service/notify_actions.py). URLs and secrets are write-only: a
server-made signing secret is shown once, right after the channel is added."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import notify_actions as actions
from ...service.inbox import KINDS
from ...service.notify_channels import DIGESTS
from ..access import ROLE_RANK
from ..models import ChannelIn, ChannelPatch
from .forms import FORM_ERRORS, Form, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, is_htmx, panel, redirect
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def _role(who: Viewer) -> str | None:
    return who.caller.principal.role_in(who.workspace_id)


def notifications_context(request: Request, who: Viewer, **extra: Any) -> dict[str, Any]:
    rows = actions.list_channels(request.app.state.px, who.workspace_id, _person(who))
    admin = ROLE_RANK.get(_role(who) or "", 0) >= ROLE_RANK["admin"]
    return {"viewer": who, "section": "notifications", "rows": rows, "admin": admin, "kinds": KINDS,
            "digests": DIGESTS, "error": None, "error_for": None, "notice": None, "shown_secret": None,
            "values": {}, **extra}


async def _answer(request: Request, who: Viewer, status: int = 200, **extra: Any) -> Response:
    context = await in_page_thread(notifications_context, request, who, **extra)
    if extra.get("shown_secret") and not is_htmx(request):  # a redirect would lose the one showing
        return html("notifications.html", context)
    return panel(request, "_notifications.html", context, page_url="/notifications", status=status)


def _person(who: Viewer) -> str:
    return who.caller.user_id or ""  # (a signed-in page: a person's token, which always names its person)


@router.get("/notifications")
async def notifications_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("notifications.html", await in_page_thread(notifications_context, request, who))


@router.post("/notifications")
async def add(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    def work() -> dict:
        body = ChannelIn.model_validate({"scope": form.get("scope") or "me", "kind": form.get("kind"),
                                         "name": form.get("name"), "url": form.get("url"),
                                         "secret": form.optional("secret"), "events": form.getlist("events") or None,
                                         "digest": form.get("digest") or "off"})
        return actions.add_channel(request.app.state.px, who.workspace_id, _person(who), _role(who),
                                   body.model_dump(), address=who.caller.address)
    try:
        made = await in_page_thread(work)
    except FORM_ERRORS as e:
        # (the URL and the secret are never sent back)
        values: dict[str, Any] = {k: v for k, v in form.values().items() if k not in ("url", "secret")}
        values["events"] = form.getlist("events")
        return await _answer(request, who, status_of(e), error=message_of(e), error_for="new", values=values)
    return await _answer(request, who, shown_secret=made if made.get("secret") else None,
                         notice=f"Added {made['name']}.")


@router.post("/notifications/{channel_id}")
async def change(request: Request, channel_id: str, form: Form = Depends(read_form),
                 who: Viewer = Depends(viewer)) -> Response:
    def work() -> dict:
        body = ChannelPatch.model_validate({"events": form.getlist("events") or None,
                                            "digest": form.optional("digest"), "enabled": form.get("enabled") == "on"})
        return actions.update_channel(request.app.state.px, who.workspace_id, _person(who), _role(who),
                                      channel_id, body.model_dump(exclude_none=True), address=who.caller.address)
    try:
        done = await in_page_thread(work)
    except FORM_ERRORS as e:
        return await _answer(request, who, status_of(e), error=message_of(e), error_for=channel_id)
    return await _answer(request, who, notice=f"Saved {done['name']}.")


async def _on_channel(request: Request, who: Viewer, channel_id: str, action, notice: str) -> Response:
    """Remove or test one channel through its use case; a refusal is shown on the channel's row."""
    try:
        await in_page_thread(action, request.app.state.px, who.workspace_id, _person(who), _role(who), channel_id)
    except FORM_ERRORS as e:
        return await _answer(request, who, status_of(e), error=message_of(e), error_for=channel_id)
    return await _answer(request, who, notice=notice)


@router.post("/notifications/{channel_id}/remove")
async def remove(request: Request, channel_id: str, who: Viewer = Depends(viewer)) -> Response:
    return await _on_channel(request, who, channel_id, actions.remove_channel, "Removed.")


@router.post("/notifications/{channel_id}/test")
async def test(request: Request, channel_id: str, who: Viewer = Depends(viewer)) -> Response:
    return await _on_channel(request, who, channel_id, actions.test_channel,
                             "A test message is on its way: see the channel's delivery log.")


@router.get("/notifications/{channel_id}")
async def channel_log(request: Request, channel_id: str, who: Viewer = Depends(viewer)) -> Response:
    log = await in_page_thread(actions.channel_log, request.app.state.px, who.workspace_id, _person(who),
                               channel_id)
    return html("notification_log.html", {"viewer": who, "section": "notifications", **log})


@router.post("/notifications/deliveries/{delivery_id}/redeliver")
async def redeliver(request: Request, delivery_id: str, who: Viewer = Depends(viewer)) -> Response:
    try:
        again = await in_page_thread(actions.redeliver, request.app.state.px, who.workspace_id, _person(who),
                                     _role(who), delivery_id)
    except FORM_ERRORS as e:
        return html("error_fragment.html", {"message": message_of(e)}, status_of(e))
    return redirect(request, f"/notifications/{again['channel_id']}")
