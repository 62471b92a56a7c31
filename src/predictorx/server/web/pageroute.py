"""Errors on web routes become pages, not the API's JSON.

Every web router uses `PageRoute`: a missing or bad cookie shows the login page, an unknown id
the 404 page, anything else a client caused an error page with its message. htmx requests get a
small fragment instead of a whole page, and a lost session sends htmx to the login page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.routing import Match, Route
from starlette.types import Scope

from ...errors import ClientError
from ...service.auth import Unauthorized
from .render import html, is_htmx
from .ssobuttons import sign_in_buttons

TITLES = {400: "Bad request", 401: "Sign in", 403: "Not allowed", 404: "Not found", 409: "Conflict",
          413: "Too large", 422: "Cannot do that"}


#: "; `predictorx issue list` shows the issues": advice for the CLI, not for a browser's 404 page.
_CLI_ADVICE = re.compile(r"[;,]?\s*[^;,]*`predictorx [^`]*`[^;]*")


def for_browser(message: str) -> str:
    """A service's not-found sentence without its CLI advice, as a sentence (the API keeps it)."""
    text = _CLI_ADVICE.sub("", message).strip(" ;,.") or "There is nothing at this address"
    return text[0].upper() + text[1:] + "."


def error_page(request: Request, status: int, message: str) -> Response:
    if status == 404:
        message = for_browser(message)
    if is_htmx(request):
        return html("error_fragment.html", {"message": message}, status)
    return html("error.html", {"status": status, "title": TITLES.get(status, "Error"), "message": message,
                               "viewer": getattr(request.state, "viewer", None)}, status)


def login_page(request: Request, message: str | None = None, status: int = 401) -> Response:
    if is_htmx(request):
        return Response(status_code=status, headers={"HX-Redirect": "/login"})
    return html("login.html", {"message": message, "viewer": None, "providers": sign_in_buttons(request)}, status)


def confirm_page(request: Request, code: str, *, from_elsewhere: bool) -> Response:
    """A sign-in link opened: the code in a form whose button signs in (nothing spent yet)."""
    return html("login.html", {"message": None, "viewer": None, "code": code, "from_elsewhere": from_elsewhere})


class PageRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except Unauthorized:
                return login_page(request)
            except ClientError as e:  # the one root: services, resource types, the store, forms
                return error_page(request, e.status, e.message)
            except RequestValidationError as e:
                # Ids in paths are plain strings, so what fails here is a query value.
                return error_page(request, 400, "; ".join(str(err.get("msg")) for err in e.errors()[:3]))
            except HTTPException as e:
                return error_page(request, e.status_code, str(e.detail))

        return guarded


class PageFallback(Route):
    """GET of a URL nothing else answers: the HTML 404 page. API and static paths keep their
    JSON 404, and other methods their 404/405, because this route does not match them."""

    def __init__(self) -> None:
        super().__init__("/{path:path}", self._answer, methods=["GET"], include_in_schema=False)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = scope.get("path", "")
        if scope["type"] != "http" or path.startswith(("/api/", "/static/")) or path in ("/api", "/static"):
            return Match.NONE, {}
        return super().matches(scope)

    @staticmethod
    async def _answer(request: Request) -> Response:
        return error_page(request, 404, "There is no page at this address.")

