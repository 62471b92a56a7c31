"""The sign-in page's "Sign in with …" links: the server's OpenID providers (web/sso.py), read at
most every 2 s (the sign-in page is shown for every lost session)."""

from __future__ import annotations

import time

from fastapi import Request

from ...service import oidc_providers

_buttons: tuple[float, object, list[tuple[str, str]]] = (0.0, None, [])


def sign_in_buttons(request: Request) -> list[tuple[str, str]]:
    """(name, display name) of each provider."""
    global _buttons
    at, app, known = _buttons
    if app is request.app and time.monotonic() - at < 2.0:
        return known
    with request.app.state.px.read() as s:
        known = oidc_providers.buttons(s)
    _buttons = (time.monotonic(), request.app, known)
    return known
