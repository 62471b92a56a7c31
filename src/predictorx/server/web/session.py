"""Who is looking at a page: the `px_token` cookie, `/login` and `/logout`.

Sign-in is by single-use code only (R-SEC-7): `predictorx up` and `predictorx web` print
`/login?code=…`, and the sign-in page takes the same code (or the whole link) pasted. Opening the
link spends nothing: it shows a page whose "Sign in" button posts the code back (a same-origin POST,
which OriginGuard checks), so a link planted on another site cannot sign the victim's browser in as
the attacker (login CSRF, issue 29 §10). The code is spent for a fresh web-session token kept in an HttpOnly, SameSite=Strict cookie that lives no
longer than that token. A token itself is never accepted in a URL or a form: a link carrying one
would sign the victim in as whoever made it, and would sit in history and logs. The browser is
then sent on to `/`, which drops the code from the address bar.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse, Response

from ...service import auth, oidc_signin
from ..deps import WORKSPACE_COOKIE, Caller, client_address, get_principal
from .forms import Form, read_form
from .pageroute import PageRoute, confirm_page, login_page
from .pagework import in_page_thread
from .render import html

COOKIE = "px_token"
# The cookie dies with the token it carries (minted for WEB_SESSION_TTL when the code is spent).
COOKIE_MAX_AGE = int(auth.WEB_SESSION_TTL.total_seconds())

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
            user = auth.user_of(s, principal)
            mine = auth.workspaces_of(s, principal) if len(principal.workspace_ids) > 1 else []
            return Viewer(Caller(principal, ws.id, client_address(request)), user.name if user else "", ws.name,
                          tuple((w.id, w.name) for w in mine))
    seen = await in_page_thread(load)
    request.state.viewer = seen
    return seen


def _sign_in(request: Request, code: str) -> Response:
    code = code.strip()
    if "code=" in code:  # the whole link was pasted
        code = code.split("code=", 1)[1].split("&", 1)[0].strip()
    try:
        with request.app.state.px.write() as s:
            token = auth.redeem_login_code(s, code, address=client_address(request))
    except auth.Unauthorized as e:
        return login_page(request, e.message)
    return set_session_cookie(request, RedirectResponse("/", status_code=303), token)


def set_session_cookie(request: Request, response: Response, token: str) -> Response:
    """The web-session token in its cookie (also after an OpenID sign-in, web/sso.py)."""
    response.set_cookie(COOKIE, token, max_age=COOKIE_MAX_AGE, path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.get("/login")
def login(request: Request, code: str | None = Query(default=None, max_length=500),
          token: str | None = Query(default=None, max_length=500)) -> Response:
    if token is not None:
        return login_page(request, "Sign-in links carry a single-use code, not a token; run `predictorx web` "
                                   "and open the link it prints.")
    if code is None:
        return login_page(request, status=200)
    # Never redeemed on a GET: a page with a button that posts it (issue 29 §10).
    return confirm_page(request, code.strip(), from_elsewhere=_cross_site(request))


def _cross_site(request: Request) -> bool:
    return request.headers.get("sec-fetch-site", "").lower() in CROSS_SITE


#: What a browser says of a request another site started (Fetch Metadata).
CROSS_SITE = ("cross-site", "same-site")


@router.post("/login")
def login_with_form(request: Request, form: Form = Depends(read_form)) -> Response:
    if _cross_site(request):  # OriginGuard refuses these too; a sign-in is never one of them
        return login_page(request, "Sign in from this server's own sign-in page: another site cannot sign "
                                   "you in.", status=403)
    code = form.get("code")
    if not code:
        return login_page(request, "Paste the sign-in code (or the whole link) that `predictorx web` printed.",
                          status=400)
    return _sign_in(request, code)


@router.post("/logout")
def logout(request: Request) -> Response:
    """The web session's token is revoked (not only its cookie dropped); a session an OpenID
    provider signed in goes on to that provider's end-session endpoint, which comes back to /login."""
    from ..publicurl import public_base

    raw = request.cookies.get(COOKIE)
    with request.app.state.px.write() as s:
        ended = auth.end_web_session(s, raw) if raw else None
        end_url = oidc_signin.end_session_url(s, ended, public_base(request) + "/login") if ended else None
    if end_url:  # a page, not a redirect: the CSP's form-action 'self' stops a form's redirect elsewhere
        response: Response = html("login.html", {"viewer": None, "signed_out_at": end_url}, 200,
                                  {"Refresh": f"0; url={end_url}"})
    else:
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
