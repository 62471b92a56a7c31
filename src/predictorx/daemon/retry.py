"""The daemon's one retry mechanism (issue 10, issue 14): tenacity, exponential backoff with jitter.

Every HTTP call, the message uploader and the push connection wait through `backoff()`; what is
worth retrying is decided in one place (`transient`): no answer at all, a proxy that found no
replica (502/503/504), a timeout or rate limit (408/429), a server error. A 4xx is the server's
considered answer and is never retried.
"""

from __future__ import annotations

from collections.abc import Callable

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
