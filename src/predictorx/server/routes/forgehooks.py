"""Forge webhooks (issue 22 §4): `POST /api/forges/{connection_id}/webhook`.

No user token: a delivery is authenticated by the forge's own signature (or token) with the
connection's webhook secret (service/forgeevents.py), so the role matrix lists it as public. An
unknown connection answers 404, a bad signature 401 and changes nothing, a replayed delivery id
200 "already taken" and changes nothing. The body is bounded here (a forge's payload is far
below the app-wide limit) before anything reads it.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool

from ...service import forgeevents
from ...service.errors import ServiceError
from ..deps import get_state
from ..state import AppState

router = APIRouter(prefix="/api/forges", tags=["forges"])

#: GitHub caps a delivery at 25 MB but PR, review and check payloads are tens of KiB.
MAX_WEBHOOK_BYTES = 2 * 1024 * 1024


class TooLarge(ServiceError):
    status = 413


async def _bounded_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_WEBHOOK_BYTES:
        raise TooLarge(f"a webhook delivery may be at most {MAX_WEBHOOK_BYTES // 1024} KiB")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_WEBHOOK_BYTES:
            raise TooLarge(f"a webhook delivery may be at most {MAX_WEBHOOK_BYTES // 1024} KiB")
        chunks.append(chunk)
    return b"".join(chunks)


@router.post("/{connection_id}/webhook")
async def webhook(connection_id: str, request: Request, state: AppState = Depends(get_state)) -> dict:
    body = await _bounded_body(request)
    headers = {k.lower(): v for k, v in request.headers.items()}
    outcome = await run_in_threadpool(forgeevents.ingest, state, connection_id[:64], headers, body)
    return {"ok": True, "taken": outcome.taken, "detail": outcome.message}
