"""An autopilot's inbound webhook: `POST /api/autopilot-hooks/{hook_id}` (issue 27 §5).

No user token: a delivery is authenticated by its signature under the autopilot's signing secret
(service/autopilot_webhook.py), so the role matrix lists it as public. Unknown or rotated URL 404,
no signature 401, a wrong one 403, all changing nothing; the body is bounded before it is read.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from ...service import autopilot_webhook
from ..deps import get_state
from ..state import AppState
from .signedhooks import receive

router = APIRouter(prefix="/api/autopilot-hooks", tags=["autopilots"])

MAX_DELIVERY_BYTES = 256 * 1024


@router.post("/{hook_id}")
async def deliver(hook_id: str, request: Request, state: AppState = Depends(get_state)) -> dict:
    done = await receive(request, state, autopilot_webhook.ingest, hook_id, limit=MAX_DELIVERY_BYTES,
                         what="an autopilot delivery")
    return {"fired": done.fired, "detail": done.detail, "firing_id": done.firing_id,
            "issue_number": done.issue_number}
