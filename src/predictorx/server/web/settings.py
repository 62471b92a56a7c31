"""Settings (issue 26 §5): the workspace's name, its members and their roles, and the person's own
tokens — through the same use cases as `/api/workspaces`, `/api/workspaces/{ref}/members` and
`/api/tokens` (and so the CLI), with the same checks and audit records — and links to the other
settings pages (settings_places.py).

A member sees the members and their own tokens; owners and admins get the forms. Each control is
offered only where the service would accept it (members.change_refusal): nobody is offered to
remove or demote the last owner, nor an admin to touch an owner. A new member's token and a new
personal token are shown once, right after they are made.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import members as member_svc
from ...service import workspaces as ws_svc
from ..access import ROLE_RANK
from ..models import MemberIn, RoleIn, TokenIn, WorkspaceUpdate
from .forms import FORM_ERRORS, Form, FormError, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, is_htmx, panel, redirect
from .session import Viewer, viewer
from .settings_places import SETTINGS_PLACES

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def _role(who: Viewer) -> str | None:
    return who.caller.principal.role_in(who.workspace_id)


def _me(who: Viewer) -> str:
    return who.caller.user_id or ""  # (pages are a person's: session.viewer refuses other tokens)


def _member_rows(who: Viewer, members: list, owners: int) -> list[dict[str, Any]]:
    mine = _role(who)
    rows = []
    for m, u in members:
        roles = [r for r in member_svc.ROLES if r != m.role and member_svc.change_refusal(mine, m.role, r, owners) is None]
        refused = member_svc.change_refusal(mine, m.role, None, owners)
        rows.append({"member": m, "user": u, "you": u.id == who.caller.user_id, "roles": roles,
                     "removable": refused is None, "why_not": refused.message if refused is not None else None})
    return rows


def settings_context(request: Request, who: Viewer, **extra: Any) -> dict[str, Any]:
    role = _role(who)
    with request.app.state.px.read() as s:
        ws = ws_svc.find_mine(s, who.caller.principal.workspace_ids, who.workspace_id)
        members = member_svc.list_members(s, ws.id)
        owners = member_svc.owner_count(s, ws.id)
        tokens = member_svc.list_tokens(s, _me(who))
    manage = ROLE_RANK.get(role or "", 0) >= ROLE_RANK["admin"]
    places = [p for p in SETTINGS_PLACES if ROLE_RANK.get(role or "", 0) >= ROLE_RANK[p.least]]
    return {"viewer": who, "section": "settings", "workspace": ws, "role": role, "manage": manage,
            "members": _member_rows(who, members, owners), "roles": member_svc.ROLES, "tokens": tokens,
            "places": places, "error": None, "error_for": None, "notice": None, "shown": None, "values": {}, **extra}


async def _answer(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
    context = await in_page_thread(settings_context, request, who, **extra)
    if extra.get("shown") and not is_htmx(request):  # a redirect would lose the one showing
        return html("settings.html", context)
    return panel(request, "_settings.html", context, page_url="/settings", status=status)


async def _act(request: Request, who: Viewer, work: Any, where: str, form: Form | None = None,
               notice: str | None = None) -> Response:
    """Run one use case; its refusal is shown next to the control that asked for it."""
    try:
        shown = await in_page_thread(work)
    except FORM_ERRORS as e:
        status = status_of(e)
        return await _answer(request, who, status=status if status < 500 else 422, error=message_of(e),
                             error_for=where, values=form.values() if form else {})
    return await _answer(request, who, shown=shown, notice=notice, error_for=None)


@router.get("/settings")
async def settings_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("settings.html", await in_page_thread(settings_context, request, who))


@router.post("/settings/workspace")
async def rename(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        name = WorkspaceUpdate(name=form.get("name")).name or ""
        with request.app.state.px.write() as s:
            ws_svc.rename(ws_svc.find_mine(s, who.caller.principal.workspace_ids, who.workspace_id), name)
    return await _act(request, who, work, "workspace", form, notice="Workspace renamed.")


@router.post("/settings/members")
async def invite(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    def work() -> dict[str, Any]:
        body = MemberIn(name=form.get("name"), email=form.optional("email"), role=form.get("role") or "member")
        with request.app.state.px.write() as s:
            user, token = member_svc.add_member(s, who.workspace_id, who.caller.user_id, name=body.name,
                                                email=body.email, role=body.role, address=who.caller.address)
            return {"kind": "member", "name": user.name, "role": body.role, "token": token}
    return await _act(request, who, work, "invite", form)


@router.post("/settings/members/{user_id}/role")
async def change_role(request: Request, user_id: str, form: Form = Depends(read_form),
                      who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        body = RoleIn(role=form.get("role"))
        with request.app.state.px.write() as s:
            member_svc.set_role(s, who.workspace_id, who.caller.user_id, user_id, body.role,
                                address=who.caller.address)
    return await _act(request, who, work, user_id, notice="Role changed.")


@router.post("/settings/members/{user_id}/remove")
async def remove(request: Request, user_id: str, who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        with request.app.state.px.write() as s:
            member_svc.remove_member(s, who.workspace_id, who.caller.user_id, user_id, address=who.caller.address)
    if user_id == who.caller.user_id:  # leaving: this workspace's pages are no longer theirs
        try:
            await in_page_thread(work)
        except FORM_ERRORS as e:
            return await _answer(request, who, status=status_of(e), error=message_of(e), error_for=user_id)
        return redirect(request, "/")
    return await _act(request, who, work, user_id, notice="Member removed; their tokens here no longer work.")


def _days(form: Form) -> int | None:
    text = form.get("days")
    if not text:
        return None
    if not text.isdigit():
        raise FormError("days must be a whole number from 1 to 3650, or empty for a token that does not expire")
    return int(text)


@router.post("/settings/tokens")
async def create_token(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    def work() -> dict[str, Any]:
        body = TokenIn(name=form.get("name"), days=_days(form))
        with request.app.state.px.write() as s:
            tok, raw = member_svc.create_token(s, _me(who), body.name, body.days, address=who.caller.address)
            return {"kind": "token", "name": tok.name, "token": raw}
    return await _act(request, who, work, "token", form)


@router.post("/settings/tokens/{token_id}/revoke")
async def revoke_token(request: Request, token_id: str, who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        with request.app.state.px.write() as s:
            member_svc.revoke_token(s, _me(who), token_id, address=who.caller.address)
    return await _act(request, who, work, "tokens", notice="Token revoked.")
