"""Sending one claimed delivery (service/notify_deliveries.py), outside any transaction.

A webhook is a POST of the JSON body, signed: `X-PredictorX-Signature: sha256=<hex>` is the
HMAC-SHA256, under the channel's secret, of `<timestamp>.<body>` where the timestamp (Unix seconds)
is `X-PredictorX-Timestamp` — a receiver checks both and refuses an old timestamp (a replay).
`X-PredictorX-Delivery` names the message (a redelivery keeps it), `X-PredictorX-Event` its kind.
An Apprise URL gets a title and a short body through Apprise (https://github.com/caronc/apprise)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from . import notify_guard
from .notify_channels import url_problem
from .notify_deliveries import Claimed, Outcome

TIMEOUT = 10.0
USER_AGENT = "PredictorX-Notifier/1"
#: Set to 1 on the server to let webhooks and Apprise URLs reach loopback, private and link-local
#: addresses (a receiver on the same machine or network). Off by default: any member adds a channel,
#: and its delivery log shows the start of each answer, so it must not be a way to read internal
#: services (service/notify_guard.py).
ALLOW_PRIVATE_ENV = notify_guard.ALLOW_PRIVATE_ENV


def signature(secret: str, timestamp: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def body_of(claimed: Claimed) -> bytes:
    return json.dumps({"delivery": claimed.delivery_key, **claimed.payload}, sort_keys=True,
                      separators=(",", ":")).encode()


def send(claimed: Claimed) -> Outcome:
    began = time.monotonic()
    try:
        outcome = _unsendable(claimed) or (_webhook(claimed) if claimed.kind == "webhook" else _apprise(claimed))
    except Exception as e:  # noqa: BLE001 — a receiver's failure is the delivery's, never the server's
        outcome = Outcome(False, None, "", f"{type(e).__name__}: {e}"[:500])
    outcome.duration_ms = int((time.monotonic() - began) * 1000)
    return outcome


def _unsendable(claimed: Claimed) -> Outcome | None:
    """A URL that cannot be sent to (one stored before it was checked when added): failed at once,
    not retried — trying again changes nothing."""
    problem = url_problem(claimed.kind, claimed.url)
    if problem is None:
        return None
    return Outcome(False, None, "", f"the channel's URL cannot be sent to: {problem}; remove the channel and add "
                   "it again with a valid URL", refused=True)


def private_address(url: str) -> str | None:
    """The first address of the URL's host that is not a public one (None: all are public, or
    private ones are allowed on this server): service/notify_guard.py."""
    return notify_guard.private_address(url)


def _webhook(claimed: Claimed) -> Outcome:
    import httpx2 as httpx

    try:
        private = private_address(claimed.url)
    except OSError as e:
        return Outcome(False, None, "", f"the webhook's host does not resolve: {e}"[:500])
    if private is not None:
        return Outcome(False, None, "", f"the webhook's host is a private address ({private}); the server's "
                       f"{ALLOW_PRIVATE_ENV}=1 allows those", refused=True)
    body = body_of(claimed)
    stamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT,
               "X-PredictorX-Event": claimed.event, "X-PredictorX-Delivery": claimed.delivery_key,
               "X-PredictorX-Timestamp": stamp, "X-PredictorX-Signature": signature(claimed.secret or "", stamp, body)}
    # The check above and the connection resolve the name apart: the connection's own lookup is
    # classified too, so a name that moves to a private address in between (DNS rebinding) is refused.
    with notify_guard.connections() as refused:
        try:
            r = httpx.post(claimed.url, content=body, headers=headers, timeout=TIMEOUT, follow_redirects=False)
        except httpx.HTTPError as e:
            if refused:
                return _refused(refused[0])
            return Outcome(False, None, "", f"{type(e).__name__}: {e}"[:500])
    excerpt = r.text[:500]
    ok = 200 <= r.status_code < 300
    return Outcome(ok, r.status_code, excerpt, None if ok else f"the receiver answered {r.status_code}")


def text_of(payload: dict[str, Any]) -> tuple[str, str]:
    """A title and a body for chat and e-mail."""
    if payload.get("event") == "digest":
        items = payload.get("items") or []
        lines = [f"• {i.get('title', '')}" for i in items[:50]]
        more = len(items) - 50
        return (f"Predictor X: {payload.get('count', len(items))} things need you",
                "\n".join(lines) + (f"\n… and {more} more" if more > 0 else ""))
    item = payload.get("item") or {}
    return f"Predictor X: {item.get('title', payload.get('event', ''))}", str(item.get("detail") or item.get("link") or "")


def _apprise(claimed: Claimed) -> Outcome:
    import apprise

    title, body = text_of(claimed.payload)
    sender = apprise.Apprise()
    if not sender.add(claimed.url):
        return Outcome(False, None, "", "Apprise does not understand this channel's URL")
    private = notify_guard.private_named(claimed.url)  # (again: DNS may have changed since it was added)
    if private is not None:
        return _refused(private)
    with notify_guard.connections() as refused, apprise.LogCapture(level=apprise.logging.WARNING) as log:
        ok = bool(sender.notify(title=title, body=body or title))
        said = log.getvalue().strip()
    if refused:  # a host the plugin contacts, named in the URL or not: nothing was sent, nothing read
        return _refused(refused[0])
    return Outcome(ok, None, said[:500], None if ok else (said.splitlines()[-1][:500] if said else "not delivered"))


def _refused(where: str) -> Outcome:
    return Outcome(False, None, "", f"the channel's host is a private address ({where}); the server's "
                   f"{ALLOW_PRIVATE_ENV}=1 allows those", refused=True)
