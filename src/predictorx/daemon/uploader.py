"""Send an agent's messages to the server in order, in batches, with sequence numbers.

Every message gets its seq when the agent says it, so a retried batch is idempotent (the server
ignores seqs it has). A failed send keeps the batch and retries; nothing acknowledged is dropped,
and what was not acknowledged is still in the task's raw stream log.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .retry import backoff
from .serverapi import ServerApi, ServerError

log = logging.getLogger("predictorx.daemon")


class MessageUploader:
    def __init__(self, api: ServerApi, task_id: str, *, max_batch: int = 100, interval: float = 0.05):
        self.api = api
        self.task_id = task_id
        self.max_batch = max_batch
        self.interval = interval
        self._next_seq = 0
        self._pending: list[dict[str, Any]] = []
        self._wake = asyncio.Event()
        self._closed = False
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def add(self, kind: str, content: dict[str, Any]) -> None:
        self._pending.append({"seq": self._next_seq, "kind": kind, "content": content})
        self._next_seq += 1
        if len(self._pending) >= self.max_batch:
            self._wake.set()

    async def _send_some(self) -> None:
        while self._pending:
            batch = self._pending[: self.max_batch]
            try:
                await self.api.messages(self.task_id, batch)
            except ServerError as e:
                if 400 <= e.status < 500 and e.status not in (408, 429):
                    log.error("task %s: the server refused %d messages (%s); they stay in the raw log",
                              self.task_id, len(batch), e)
                    del self._pending[: len(batch)]  # only the refused batch; the rest still goes
                    continue
                raise
            del self._pending[: len(batch)]

    async def _loop(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self.interval)
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
            # Until it goes through (close() bounds the wait): a batch is never skipped or reordered.
            async for attempt in backoff(None, retry_on=lambda e: isinstance(e, ServerError),
                                         before_sleep=self._retrying):
                with attempt:
                    await self._send_some()
            if self._closed and not self._pending:
                return

    def _retrying(self, state) -> None:  # noqa: ANN001
        log.warning("task %s: sending messages failed (%s); retrying", self.task_id, state.outcome.exception())

    async def close(self, timeout: float = 30.0) -> None:
        """Flush everything (bounded), then stop."""
        self._closed = True
        self._wake.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout)
            except asyncio.TimeoutError:
                self._task.cancel()
                log.error("task %s: %d messages could not be sent; they stay in the raw log",
                          self.task_id, len(self._pending))
