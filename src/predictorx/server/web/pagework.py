"""Where pages do their work: threads of their own, never the event loop, never the API's (issue 29 §5).

A page's database reads, the API calls it makes and its template rendering run here, at most
PAGE_THREADS at a time (`PREDICTORX_PAGE_THREADS`, default 2); the API's routes keep the default
thread pool (40) to themselves. However many people hammer pages, a daemon's heartbeat, claim or
finish finds a free thread and the event loop answers `/api/health` at once: pages queue behind
each other, not in front of the daemons.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")
ENV = "PREDICTORX_PAGE_THREADS"
#: Two: pages are Python under one GIL, so more threads add no throughput on a page view but
#: each one more makes the event loop wait longer for the GIL (bench/pagestall.py: health p99
#: 48 ms with one page thread, ~150 ms with two, more with four, on a loaded 2-core machine);
#: two, so that one page waiting on something slow (a room's `agents-room` read) does not hold
#: up every other page.
DEFAULT_THREADS = 2


def page_threads() -> int:
    raw = os.environ.get(ENV, "").strip()
    try:
        value = int(raw) if raw else DEFAULT_THREADS
    except ValueError:
        raise ValueError(f"{ENV} must be a whole number of threads (1–64), not {raw!r}") from None
    if not 1 <= value <= 64:
        raise ValueError(f"{ENV} must be between 1 and 64, not {value}")
    return value


#: One limiter per event loop (a limiter belongs to the loop that made it; tests start several).
_limiters: dict[int, anyio.CapacityLimiter] = {}


def _limiter() -> anyio.CapacityLimiter:
    import asyncio

    key = id(asyncio.get_running_loop())
    limiter = _limiters.get(key)
    if limiter is None:
        if len(_limiters) > 64:  # loops of finished test servers
            _limiters.clear()
        limiter = _limiters[key] = anyio.CapacityLimiter(page_threads())
    return limiter


async def in_page_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a page thread."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=_limiter())
