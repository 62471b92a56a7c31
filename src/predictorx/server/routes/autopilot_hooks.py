"""An autopilot's inbound webhook: `POST /api/autopilot-hooks/{hook_id}` (issue 27 §5).

No user token: a delivery is authenticated by its signature under the autopilot's signing secret
(service/autopilot_webhook.py), so the role matrix lists it as public. Unknown or rotated URL 404,
no signature 401, a wrong one 403, all changing nothing; the body is bounded before it is read.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool

from ...service import autopilot_webhook
from ..deps import get_state
from ..state import AppState
from .forgehooks import TooLarge

router = APIRouter(prefix="/api/autopilot-hooks", tags=["autopilots"])

MAX_DELIVERY_BYTES = 256 * 1024


async def _bounded_body(request: Request) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_DELIVERY_BYTES:
            raise TooLarge(f"an autopilot delivery may be at most {MAX_DELIVERY_BYTES // 1024} KiB")
        chunks.append(chunk)
    return b"".join(chunks)


@router.post("/{hook_id}")
async def deliver(hook_id: str, request: Request, state: AppState = Depends(get_state)) -> dict:
    body = await _bounded_body(request)
    headers = {k.lower(): v for k, v in request.headers.items()}
    done = await run_in_threadpool(autopilot_webhook.ingest, state, hook_id[:64], headers, body)
    return {"fired": done.fired, "detail": done.detail, "firing_id": done.firing_id,
            "issue_number": done.issue_number}
