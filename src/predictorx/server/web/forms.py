"""Reading the url-encoded bodies htmx and plain forms send, and turning errors into one line.

Parsed here rather than with FastAPI's Form() so a malformed or oversized body becomes a message
on the form, never a 500 or an error page in JSON.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from fastapi import Request
from pydantic import ValidationError
from sqlalchemy.exc import StatementError

from ...errors import ClientError

MAX_FORM_BYTES = 1_000_000


class FormError(ClientError):
    """Input a form cannot accept; the message is shown next to the form (422). A request that
    is itself unreadable — the body, a query value — says 400 and gets the error page."""

    status = 422


class Form:
    def __init__(self, pairs: list[tuple[str, str]]):
        self._pairs = pairs

    def get(self, name: str, default: str = "") -> str:
        for key, value in self._pairs:
            if key == name:
                return value.strip()
        return default

    def getlist(self, name: str) -> list[str]:
        return [value.strip() for key, value in self._pairs if key == name and value.strip()]

    def optional(self, name: str) -> str | None:
        return self.get(name) or None

    def values(self) -> dict[str, str]:
        """What was typed, to put back into a form shown again with an error."""
        return {key: value for key, value in self._pairs}


async def read_form(request: Request) -> Form:
    return await _read_form(request, MAX_FORM_BYTES)


async def _read_form(request: Request, limit: int) -> Form:
    body = await request.body()
    if len(body) > limit:
        raise FormError("the form is too large", status=400)
    text = body.decode("utf-8", errors="replace").replace("\x00", "")
    try:
        return Form(parse_qsl(text, keep_blank_values=True, max_num_fields=2000))
    except ValueError:
        raise FormError("the form has too many fields", status=400) from None


async def read_long_form(request: Request) -> Form:
    """A form whose text may be pasted in megabytes (a comment): read up to the request body's
    own limit (bodyguard), so the handler can say how long the text was instead of "too large"."""
    return await _read_form(request, 16 * MAX_FORM_BYTES)


def message_of(exc: Exception) -> str:
    """The one line a person should read for an error a service, a resource handler or a
    request model raised."""
    if isinstance(exc, ClientError):
        return exc.message
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors()[:3]:
            where = ".".join(str(x) for x in err.get("loc", ()))
            parts.append(f"{where}: {err.get('msg', 'invalid')}" if where else err.get("msg", "invalid"))
        return "; ".join(parts)
    if isinstance(exc, StatementError):
        # The API answers these with a generic message too; the form says which kind it was.
        return "a value in the form refers to something that does not exist, or already exists"
    return str(exc)


def status_of(exc: Exception) -> int:
    return getattr(exc, "status", 422)


def json_object(text: str, what: str = "payload") -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except (ValueError, RecursionError) as e:
        raise FormError(f"{what} is not valid JSON ({getattr(e, 'msg', e)}, line {getattr(e, 'lineno', '?')})") from None
    if not isinstance(value, dict):
        raise FormError(f'{what} must be a JSON object, like {{"key": "value"}}')
    return value


FORM_ERRORS = (ClientError, ValidationError, StatementError)
