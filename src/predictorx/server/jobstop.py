"""Stopping the app's background jobs at shutdown.

One `cancel()` is not always enough: on Python 3.11 `asyncio.wait_for` can swallow a cancellation
that arrives as the awaited event is set (fixed in 3.12), and a job waiting that way in a loop
then goes on forever — the server's stop (and a test client's exit) waited on it without end.
So the jobs are cancelled again each `interval` while any is left, and a job still running after
`limit` seconds is logged and left behind rather than holding the stop."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger("predictorx.server")


async def stop_jobs(jobs: list[asyncio.Task], *, interval: float = 0.5, limit: float = 10.0) -> list[asyncio.Task]:
    """Cancel `jobs` until they end (or `limit` passes); returns those left running."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    pending = {job for job in jobs if not job.done()}
    while pending:
        for job in pending:
            job.cancel()
        _, pending = await asyncio.wait(pending, timeout=min(interval, max(deadline - loop.time(), 0.0)))
        if pending and loop.time() >= deadline:
            log.warning("%d background job(s) did not stop within %.0f s: %s", len(pending), limit,
                        ", ".join(sorted(job.get_name() for job in pending)))
            break
    for job in jobs:  # (retrieve what ended with an error, so that nothing is reported as unretrieved)
        if job.done() and not job.cancelled():
            job.exception()
    return list(pending)
