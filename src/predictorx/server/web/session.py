"""Who is looking at a page: the `px_token` cookie, `/login` and `/logout`.

`predictorx up` (and `predictorx web`) print `/login?code=…`: a single-use code, spent for a fresh
30-day web-session token, so no long-lived token is ever printed. `/login?token=…` and the paste
form take a token directly. The token is kept in an HttpOnly, SameSite=Strict cookie (so no other site can make the browser act with it) and the browser is sent on to `/`,
which also drops the token from the address bar and history.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from ...service import auth
from ...store.schema import User
from ..deps import WORKSPACE_COOKIE, Caller, get_principal
from .forms import Form, read_form
from .pageroute import PageRoute, login_page

COOKIE = "px_token"
COOKIE_MAX_AGE = 90 * 24 * 3600

router = APIRouter(route_class=PageRoute, include_in_schema=False)


@dataclass(frozen=True)
class Viewer:
    caller: Caller
    user_name: str
    workspace_name: str
    #: (id, name) of every workspace the person belongs to, when more than one (the switcher).
    workspaces: tuple[tuple[str, str], ...] = ()

    @property
    def workspace_id(self) -> str:
        return self.caller.workspace_id


async def viewer(request: Request, principal: auth.Principal = Depends(get_principal)) -> Viewer:
    """The signed-in person and their workspace; raises Unauthorized (→ login page) otherwise."""
    if principal.kind != "user":
        raise auth.Unauthorized("pages need a person's token, not a daemon's or a task's")

    chosen = request.cookies.get(WORKSPACE_COOKIE)

    def load() -> Viewer:
        with request.app.state.px.read() as s:
            ws = auth.resolve_workspace(s, principal, chosen if chosen in principal.workspace_ids else None)
            user = s.get(User, principal.user_id)
            mine = auth.workspaces_of(s, principal) if len(principal.workspace_ids) > 1 else []
            return Viewer(Caller(principal, ws.id), user.name if user else "", ws.name,
                          tuple((w.id, w.name) for w in mine))
    seen = await run_in_threadpool(load)
    request.state.viewer = seen
    return seen


def _sign_in(request: Request, token: str) -> Response:
    state = request.app.state.px
    try:
        with state.read() as s:
            principal = auth.authenticate(s, token)
    except auth.Unauthorized:
        return login_page(request, "That token is not valid (or has expired). Open the link "
                                   "`predictorx up` printed most recently, or paste a current token.")
    if principal.kind != "user":
        return login_page(request, "That is a daemon's or a task's token; the web UI needs a person's token, "
                                   "like the one in the link `predictorx up` prints.")
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, token, max_age=COOKIE_MAX_AGE, path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.get("/login")
def login(request: Request, token: str | None = Query(default=None, max_length=500),
          code: str | None = Query(default=None, max_length=500)) -> Response:
    if code is not None:
        try:
            with request.app.state.px.write() as s:
                token = auth.redeem_login_code(s, code.strip())
        except auth.Unauthorized as e:
            return login_page(request, e.message)
    if token is None:
        return login_page(request, status=200)
    return _sign_in(request, token.strip())


@router.post("/login")
def login_with_form(request: Request, form: Form = Depends(read_form)) -> Response:
    token = form.get("token")
    if not token:
        return login_page(request, "Paste a token first.", status=400)
    return _sign_in(request, token)


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    response.delete_cookie(WORKSPACE_COOKIE, path="/", httponly=True, samesite="strict")
    return response


@router.get("/favicon.ico")
def favicon() -> Response:
    """Browsers ask for it before they read the page's <link rel=icon>."""
    return RedirectResponse("/static/favicon.svg", status_code=301)


@router.post("/workspace")
async def switch_workspace(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    """The sidebar's workspace switcher: pages (and their live events) then act in that workspace.
    A workspace the person does not belong to answers 404, as everywhere (R-SEC-2)."""
    wanted = form.get("workspace_id")
    if wanted not in who.caller.principal.workspace_ids:
        raise auth.NotFound("that workspace is not one of yours")
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(WORKSPACE_COOKIE, wanted, max_age=COOKIE_MAX_AGE, path="/", httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")
    return response
