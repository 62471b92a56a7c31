"""What every forge's webhook verification and parsing shares: case-insensitive headers, HMAC and
token checks in constant time, and reading the JSON body."""

from __future__ import annotations

import hashlib
import hmac
import json
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from .base import WebhookRejected


def header(headers: Mapping[str, str], name: str) -> str:
    """A header's value whatever case the server framework gives its names in ("" when absent)."""
    value = headers.get(name)
    if value is None:
        lowered = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == lowered), None)
    return (value or "").strip()


def hmac_sha256_hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def require_hmac(given: str, secret: str, body: bytes, *, prefix: str = "", what: str) -> None:
    """`given` must be `prefix` + the hex HMAC-SHA256 of `body` under `secret`."""
    if not secret:
        raise WebhookRejected("this connection has no webhook secret; deliveries cannot be verified")
    if not given:
        raise WebhookRejected(f"the delivery has no {what} header")
    expected = prefix + hmac_sha256_hex(secret, body)
    if not hmac.compare_digest(given.lower().encode(), expected.encode()):
        raise WebhookRejected(f"the delivery's {what} does not match this connection's webhook secret")


def require_token(given: str, secret: str, *, what: str) -> None:
    if not secret:
        raise WebhookRejected("this connection has no webhook secret; deliveries cannot be verified")
    if not given:
        raise WebhookRejected(f"the delivery has no {what} header")
    if not hmac.compare_digest(given.encode(), secret.encode()):
        raise WebhookRejected(f"the delivery's {what} is not this connection's webhook secret")


def json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise WebhookRejected("the delivery's body is not JSON") from None
    if not isinstance(payload, dict):
        raise WebhookRejected("the delivery's body is not a JSON object")
    return payload


def body_digest(body: bytes) -> str:
    """A delivery id for a forge that sends none: the same body is the same delivery."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


@contextmanager
def readable_webhook(event: str) -> Iterator[None]:
    """A delivery whose JSON lacks what its event must carry is not the forge's: rejected."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise WebhookRejected(f"the {event} delivery is not of a shape Predictor X knows ({e!r})") from None
