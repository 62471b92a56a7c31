"""Sign-in through an OpenID provider, in the browser (issue 28 §1; service/oidc_signin.py).

`GET /auth/oidc/{name}` (the sign-in page's "Sign in with …" link: a link, as the page's CSP
`form-action 'self'` would stop a form's redirect to the provider) starts the authorization
code flow and sends the browser to the provider; `GET /auth/oidc/{name}/cli?redirect=…` does the
same for `predictorx login --sso` (the CLI's loopback address gets a single-use code at the end);
the provider sends the browser back to `GET /auth/oidc/callback`. The browser's half of the sign-in
is a random value in the `px_oidc` cookie (HttpOnly, SameSite=Lax so that it comes back with the
provider's top-level redirect, 10 minutes, path /auth/oidc): a callback that arrives in another
browser — a link someone was sent — is refused. Sign-out (web/session.py) ends the provider's
session too where this one came from it (RP-initiated logout).
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response

from ...service import oidc_signin
from ..deps import client_address
from ..publicurl import public_base
from .pageroute import PageRoute, login_page
from .pagework import in_page_thread

router = APIRouter(route_class=PageRoute, include_in_schema=False)

FLOW_COOKIE = "px_oidc"
FLOW_PATH = "/auth/oidc"
FLOW_MAX_AGE = int(oidc_signin.LOGIN_TTL.total_seconds())
CALLBACK = "/auth/oidc/callback"


def redirect_uri(request: Request) -> str:
    """The one redirect URI to register at every provider: <public URL>/auth/oidc/callback."""
    return public_base(request) + CALLBACK


def _start(request: Request, name: str, cli_redirect: str | None) -> Response:
    with request.app.state.px.write() as s:
        started = oidc_signin.begin(s, name, redirect_uri=redirect_uri(request), cli_redirect=cli_redirect)
    response = RedirectResponse(started.url, status_code=303)
    response.set_cookie(FLOW_COOKIE, started.browser_secret or "", max_age=FLOW_MAX_AGE, path=FLOW_PATH,
                        httponly=True, samesite="lax", secure=request.url.scheme == "https")
    return response


# (the callback first: `/auth/oidc/{name}` would take "callback" for a provider's name)
@router.get(CALLBACK)
async def callback(request: Request, state: str | None = Query(default=None, max_length=200),
                   code: str | None = Query(default=None, max_length=2000),
                   error: str | None = Query(default=None, max_length=200),
                   error_description: str | None = Query(default=None, max_length=500)) -> Response:
    if error:
        detail = f" ({error_description})" if error_description else ""
        return login_page(request, f"The provider did not sign you in: {error}{detail}.", status=401)
    if not state or not code:
        return login_page(request, "The provider's answer has no code or state; start again with its button.",
                          status=400)

    def finish() -> Response:
        try:
            done = oidc_signin.finish(request.app.state.px, state=state, code=code,
                                      browser_secret=request.cookies.get(FLOW_COOKIE),
                                      redirect_uri=redirect_uri(request), address=client_address(request))
        except oidc_signin.SignInRefused as e:
            return _ended(login_page(request, _sentence(e.message), status=e.status))
        except oidc_signin.IdTokenRefused as e:
            return _ended(login_page(request, _sentence(e.message), status=e.status))
        if done.purpose == "cli" and done.redirect:
            return _ended(RedirectResponse(f"{done.redirect}?code={done.token}", status_code=303))
        from .session import set_session_cookie

        return _ended(set_session_cookie(request, RedirectResponse("/", status_code=303), done.token))
    return await in_page_thread(finish)


@router.get("/auth/oidc/{name}")
async def start(request: Request, name: str) -> Response:
    return await in_page_thread(lambda: _start(request, name, None))


@router.get("/auth/oidc/{name}/cli")
async def start_for_cli(request: Request, name: str,
                        redirect: str = Query(..., max_length=200)) -> Response:
    return await in_page_thread(lambda: _start(request, name, redirect))


def _sentence(message: str) -> str:
    message = message[:1].upper() + message[1:]
    return message if message.endswith(".") else message + "."


def _ended(response: Response) -> Response:
    response.delete_cookie(FLOW_COOKIE, path=FLOW_PATH, httponly=True, samesite="lax")
    return response
