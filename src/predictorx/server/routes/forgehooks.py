"""Forge webhooks (issue 22 §4): `POST /api/forges/{connection_id}/webhook`.

No user token: a delivery is authenticated by the forge's own signature (or token) with the
connection's webhook secret (service/forgeevents.py), so the role matrix lists it as public. An
unknown connection answers 404, a bad signature 401 and changes nothing, a replayed delivery id
200 "already taken" and changes nothing. The body is bounded here (a forge's payload is far
below the app-wide limit) before anything reads it.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from ...service import forgeevents
from ..deps import get_state
from ..state import AppState
from .signedhooks import receive

router = APIRouter(prefix="/api/forges", tags=["forges"])

#: GitHub caps a delivery at 25 MB but PR, review and check payloads are tens of KiB.
MAX_WEBHOOK_BYTES = 2 * 1024 * 1024


@router.post("/{connection_id}/webhook")
async def webhook(connection_id: str, request: Request, state: AppState = Depends(get_state)) -> dict:
    outcome = await receive(request, state, forgeevents.ingest, connection_id, limit=MAX_WEBHOOK_BYTES,
                            what="a webhook delivery")
    return {"ok": True, "taken": outcome.taken, "detail": outcome.message}
