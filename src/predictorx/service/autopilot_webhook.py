"""An autopilot's inbound webhook: `POST /api/autopilot-hooks/<hook id>`, authenticated by its
signature alone.

The sender signs the delivery key and the body together — `X-Signature-256: sha256=<hex HMAC-SHA256
of "<X-Delivery-Key>.<body>" under the signing secret>` — so a captured delivery cannot be sent
again under a fresh key. Answers: an unknown or rotated URL 404; no signature 401, a wrong one 403;
a paused autopilot 409; all of them change nothing. A delivery key seen before, or a payload the
filter does not match, answers 200 and fires nothing. Otherwise the delivery fires once, its
payload kept with the firing (replayable) and shown to the run as data.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, Mapping

from sqlalchemy import select

from ..store.autopilot_schema import Autopilot
from . import autopilot_firing as firing
from . import autopilot_payload as payload
from . import secretbox
from .errors import Conflict, NotFound, ServiceError
from .transactions import Transactions

KEY_HEADER = "x-delivery-key"
SIGNATURE_HEADER = "x-signature-256"


class Unsigned(ServiceError):
    status = 401


class BadSignature(ServiceError):
    status = 403


@dataclass(frozen=True)
class Delivered:
    fired: bool
    detail: str
    firing_id: str | None = None
    issue_number: int | None = None


def signature(secret: str, key: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), key.encode() + b"." + body, hashlib.sha256).hexdigest()


def _verify(row: Autopilot, headers: Mapping[str, str], body: bytes) -> str:
    key = headers.get(KEY_HEADER, "").strip()
    given = headers.get(SIGNATURE_HEADER, "").strip().lower()
    if not given:
        raise Unsigned(f"the delivery has no {SIGNATURE_HEADER} header")
    if not key or len(key) > 200:
        raise Unsigned(f"the delivery needs an {KEY_HEADER} header (1–200 characters), signed with the body")
    secret = secretbox.unseal_from(row, "hook_secret_sealed")
    if not hmac.compare_digest(given.encode(), signature(secret, key, body).encode()):
        raise BadSignature("the delivery's signature does not match this autopilot's signing secret")
    return key


def _payload(body: bytes) -> tuple[Any, str]:
    try:
        text = body.decode("utf-8")
        return json.loads(text), text
    except ValueError:  # (UnicodeDecodeError is one)
        raise ServiceError("the delivery's body is not JSON in UTF-8") from None


def ingest(tx: Transactions, hook_id: str, headers: Mapping[str, str], body: bytes) -> Delivered:
    with tx.read() as s:
        row = s.scalar(select(Autopilot).where(Autopilot.hook_id == hook_id))
        if row is None:
            raise NotFound("no autopilot has this webhook URL (it may have been rotated)")
        key = _verify(row, headers, body)
        if row.paused:
            raise Conflict(f"autopilot {row.name!r} is paused; nothing fired")
        parsed, text = _payload(body)
        if not payload.matches(parsed, row.filter_path, row.filter_value):
            return Delivered(False, f"the payload does not match the filter {row.filter_path}={row.filter_value}")
        autopilot_id = row.id
    with tx.write() as s:
        row = s.get(Autopilot, autopilot_id)
        if row is None or row.hook_id != hook_id:  # removed or rotated meanwhile
            raise NotFound("no autopilot has this webhook URL (it may have been rotated)")
        claimed = firing.claim(s, row, slot=f"webhook:{key}", trigger="webhook", due_at=None,
                               payload_text=text)
        if claimed is None:
            return Delivered(False, f"delivery {key!r} was taken already; nothing fired again")
        firing.fire(s, row, claimed)
        return Delivered(True, claimed.detail or claimed.outcome, claimed.id, claimed.issue_number)
