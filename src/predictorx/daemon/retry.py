"""The daemon's one retry mechanism (issue 10, issue 14): tenacity, exponential backoff with jitter.

Every HTTP call, the message uploader and the push connection wait through `backoff()`; what is
worth retrying is decided in one place (`transient`): no answer at all, a proxy that found no
replica (502/503/504), a timeout or rate limit (408/429), a server error. A 4xx is the server's
considered answer and is never retried.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, stop_never, wait_exponential_jitter


class ServerError(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


#: Statuses a proxy in front of several replicas answers while one of them is down or restarting.
FAILOVER_STATUSES = (0, 502, 503, 504)


def transient(exc: BaseException) -> bool:
    """Worth another try (possibly at another server URL)."""
    if isinstance(exc, ServerError):
        return exc.status == 0 or exc.status >= 500 or exc.status in (408, 429)
    return False


#: backoff()'s first wait (it doubles from there, up to `maximum`, plus up to `initial` of jitter)
BACKOFF_INITIAL_S = 0.2


def backoff(attempts: int | None, *, initial: float = BACKOFF_INITIAL_S, maximum: float = 5.0,
            retry_on: Callable[[BaseException], bool] = transient,
            before_sleep: Callable | None = None) -> AsyncRetrying:
    """`async for attempt in backoff(n): with attempt: …` — n tries in all (None: until it works)."""
    return AsyncRetrying(
        stop=stop_never if attempts is None else stop_after_attempt(max(1, attempts)),
        wait=wait_exponential_jitter(initial=initial, max=maximum, jitter=initial),
        retry=retry_if_exception(retry_on),
        before_sleep=before_sleep,
        reraise=True,
    )


T = TypeVar("T")


async def first_then_backoff(fn: Callable[[], Awaitable[T]], attempts: int | None, *,
                             retry_on: Callable[[BaseException], bool] = transient,
                             before_sleep: Callable | None = None) -> T:
    """`fn()` as `backoff(attempts)` would try it, but its first try without tenacity: that is
    ~0.1 ms of CPU a call, a sixth of a daemon's call to the server (issue 30). After a failure
    `retry_on` accepts, the first wait is backoff()'s, and the rest go through backoff().
    `before_sleep(error)` before each wait."""
    try:
        return await fn()
    except Exception as e:
        if attempts == 1 or not retry_on(e):
            raise
        if before_sleep is not None:
            before_sleep(e)
    await asyncio.sleep(BACKOFF_INITIAL_S + random.uniform(0, BACKOFF_INITIAL_S))
    async for attempt in backoff(None if attempts is None else attempts - 1, initial=2 * BACKOFF_INITIAL_S,
                                 retry_on=retry_on, before_sleep=None if before_sleep is None else
                                 lambda state: before_sleep(state.outcome.exception())):
        with attempt:
            return await fn()
    raise AssertionError("unreachable")
