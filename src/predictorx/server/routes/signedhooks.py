"""What the signed-webhook receivers share (forgehooks.py: a forge's deliveries; autopilot_hooks.py:
an autopilot's): no user token — the service authenticates a delivery by its signature over the
exact bytes and refuses a replay — so the route reads the body, bounded far below the app-wide
limit before anything parses it, hands the service its lower-cased headers and the raw body, and
runs the service (which opens its own transactions) off the event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from fastapi import Request
from fastapi.concurrency import run_in_threadpool

from ...service.errors import ServiceError
from ..state import AppState

T = TypeVar("T")


class TooLarge(ServiceError):
    status = 413


async def bounded_body(request: Request, limit: int, what: str) -> bytes:
    """The body, refused (413) by its declared length or the moment it streams past `limit`."""
    too_large = f"{what} may be at most {limit // 1024} KiB"
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise TooLarge(too_large)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(too_large)
        chunks.append(chunk)
    return b"".join(chunks)


async def receive(request: Request, state: AppState, ingest: Callable[[AppState, str, dict[str, str], bytes], T],
                  receiver_id: str, *, limit: int, what: str) -> T:
    """Read one delivery and give it to the service's `ingest(state, receiver id, headers, body)`."""
    body = await bounded_body(request, limit, what)
    headers = {k.lower(): v for k, v in request.headers.items()}
    return await run_in_threadpool(ingest, state, receiver_id[:64], headers, body)
