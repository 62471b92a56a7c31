"""Send an agent's messages to the server in order, in batches, with sequence numbers.

Every message gets its seq when the agent says it, so a retried batch is idempotent (the server
ignores seqs it has). A failed send keeps the batch and retries; nothing acknowledged is dropped,
and what was not acknowledged is still in the task's raw stream log.

Nothing an agent prints can stop this (R-SEC-8): each message is sanitised when it is added (NUL
and lone surrogates replaced, long strings cut with a marker, the whole message bounded — see
`textsafe`), batches stay under `MAX_BATCH_BYTES` so the server's body limit never refuses them,
and an unexpected error in one batch is logged and that batch left to the raw log, never the end
of the loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from ..agents.usage import USAGE_EVENT
from ..protocol import Message, MessageBatch, Usage
from ..textsafe import clip, sanitize
from .retry import first_then_backoff
from .serverapi import ServerApi, ServerError
from .workflowhooks import post_handoff

#: Longest string kept in one message (characters); the raw log keeps the rest.
MAX_STRING_CHARS = 256 * 1024
#: One message, encoded, at most this (bytes).
MAX_MESSAGE_BYTES = 512 * 1024
#: One batch, encoded, at most this (bytes): under the smallest body limit a server accepts
#: (2 MiB, see server/bodyguard.py), so no server refuses a batch for its size.
MAX_BATCH_BYTES = 1024 * 1024


def _size(message: dict[str, Any]) -> int:
    return len(json.dumps(message, ensure_ascii=False).encode("utf-8"))


#: A CLI's session announcement (`init`, `session`: its id, model, folder) opens no batch of its own:
#: it goes with the first message that shows what the agent does (issue 30: one request fewer a run).
_RIDES_ALONG = ("init", "session")


def _rides_along(kind: str, content: dict[str, Any]) -> bool:
    return kind == "system" and content.get("event") in _RIDES_ALONG


#: The run's last messages go with its finish (protocol.FINISH_CARRIES) when they are at most this
#: (bytes, encoded): the finish's body stays far under any server's limit beside its result and review.
HANDED_OVER_BYTES = 256 * 1024

#: What the server keeps of each finish field (server/models.py TaskFinish): cut here first, so
#: the report is small and its marker says the daemon cut it.
FINISH_LIMITS = {"result": 1_000_000, "session_id": 2000, "failure_reason": 100_000, "branch_name": 500}


def bounded_finish(fields: dict[str, Any], *, minimal: bool = False) -> dict[str, Any]:
    """A finish report the server accepts whatever the agent printed (R-SEC-8). `minimal` is the
    fallback after a refusal: status, shorter text, no review."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if minimal and key not in ("status", *FINISH_LIMITS):
            continue
        if key == "messages":  # each bounded already as it was added (bounded_message)
            out[key] = value
            continue
        if key in FINISH_LIMITS and isinstance(value, str):
            value = clip(value, FINISH_LIMITS[key] // (10 if minimal else 1))
        elif isinstance(value, (dict, list, str)):
            value = sanitize(value, MAX_STRING_CHARS)
        out[key] = value
    return out


async def send_carried(api: ServerApi, task_id: str, fields: dict[str, Any]) -> bool:
    """A finish refused with what it carried (protocol.FINISH_CARRIES): its messages and the
    handoff sent on their own, as to an older server, so neither is lost with it. True if there
    was something to send."""
    messages, handoff = fields.get("messages") or [], fields.get("handoff")
    if messages:
        try:
            await api.upload(task_id, MessageBatch(tuple(Message(m["seq"], m["kind"], m["content"]) for m in messages)))
        except ServerError as e:
            log.error("task %s: %d messages could not be sent (%s); they stay in the raw log", task_id, len(messages), e)
    if handoff:
        await post_handoff(api, task_id, handoff)
    return bool(messages or handoff)


def bounded_message(seq: int, kind: str, content: Any) -> dict[str, Any]:
    """A message the server accepts whatever the agent printed: sanitised, and under the size cap."""
    return _bounded(seq, kind, content)[0]


def _bounded(seq: int, kind: str, content: Any) -> tuple[dict[str, Any], int]:
    """`bounded_message`, and its size encoded (measured once: the uploader keeps it, issue 30)."""
    if not isinstance(content, dict):
        content = {"value": content}
    limit = MAX_STRING_CHARS
    while True:
        message = {"seq": seq, "kind": kind, "content": sanitize(content, limit)}
        size = _size(message)
        if size <= MAX_MESSAGE_BYTES:
            return message, size
        if limit <= 1024:  # huge in structure, not in any one string: keep a preview of it
            preview = json.dumps(message["content"], ensure_ascii=False, default=str)
            message = {"seq": seq, "kind": kind, "content": {
                "truncated": True, "preview": clip(preview, MAX_MESSAGE_BYTES // 8)}}
            return message, _size(message)
        limit //= 4

log = logging.getLogger("predictorx.daemon")


class MessageUploader:
    """Also the run's usage (issue 27): the adapter says it as a `system`/`usage` message, which is
    not a transcript message but the latest figures, sent with the next batch (alone if no message
    waits). The server may answer a batch with `stop` (a hard budget reached): `on_stop(reason)`,
    once; the messages still go up.

    `hand_over` (a server whose finish takes messages, protocol.FINISH_CARRIES): what is still
    waiting when the uploader closes, if it is one small batch, is not sent but left in
    `handed_over` for the run's finish to carry — one request fewer per task (issue 30)."""

    def __init__(self, api: ServerApi, task_id: str, *, max_batch: int = 100, interval: float = 0.05,
                 mask: Callable[[Any], Any] | None = None, min_gap: float = 0.5,
                 on_stop: Callable[[str], None] | None = None, hand_over: bool = False):
        self.api = api
        self.hand_over = hand_over
        #: The messages left for the finish (with their seqs), once closed.
        self.handed_over: list[Message] = []
        #: The run's secrets out of every message (secretmask.Masker.any), before it is queued.
        self.mask = mask
        self.on_stop = on_stop
        #: The run's usage as last said (agents/usage.py form), and as the server last took it.
        self.usage: dict[str, Any] | None = None
        self._usage_sent: dict[str, Any] | None = None
        self._stopped = False
        self.task_id = task_id
        self.max_batch = max_batch
        self.interval = interval
        #: Batches of one task at most this often (a full one, or closing, goes at once): a message
        #: after a quiet spell goes within `interval`, a burst (a tool call and its result, the
        #: daemon's notes) as one request instead of one each — each is CPU on both ends (issue 30).
        self.min_gap = min_gap
        self._last_sent = float("-inf")
        self._next_seq = 0
        self._pending: list[dict[str, Any]] = []
        self._wake = asyncio.Event()  # send now: a full batch, or closing
        self._arrived = asyncio.Event()  # a message is waiting
        self._closed = False
        self._task: asyncio.Task | None = None
        self._batch_bytes = MAX_BATCH_BYTES

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def add(self, kind: str, content: dict[str, Any]) -> None:
        if kind == "system" and content.get("event") == USAGE_EVENT:
            self.usage = {k: v for k, v in content.items() if k != "event"}
            self._arrived.set()
            return
        seq = self._next_seq
        self._next_seq += 1
        try:
            message, size = _bounded(seq, kind, self.mask(content) if self.mask else content)
        except Exception as e:  # a message we cannot shape must not stop the run
            log.exception("task %s: message %d could not be prepared; it stays in the raw log", self.task_id, seq)
            message = {"seq": seq, "kind": "error", "content": {
                "message": f"this message could not be uploaded ({type(e).__name__}); see the task's raw log"}}
            size = _size(message)
        message["_bytes"] = size
        self._pending.append(message)
        if not _rides_along(kind, content):
            self._arrived.set()
        if len(self._pending) >= self.max_batch:
            self._wake.set()

    def _next_batch(self) -> list[dict[str, Any]]:
        batch, size = [], 0
        for message in self._pending[: self.max_batch]:
            if batch and size + message["_bytes"] > self._batch_bytes:
                break
            batch.append(message)
            size += message["_bytes"]
        return batch

    def _usage_due(self) -> bool:
        """New figures to send with the next batch. Once closing, figures alone are not sent: the
        run's finish carries its final usage (protocol.Finish), so the end costs no request of
        its own (issue 30); with messages still to send they go along."""
        return self.usage is not None and self.usage != self._usage_sent and not (self._closed and not self._pending)

    def _answered(self, answer: dict[str, Any] | None, usage: dict[str, Any] | None) -> None:
        if usage is not None:
            self._usage_sent = usage
        stop = (answer or {}).get("stop")
        if stop and not self._stopped:
            self._stopped = True
            log.warning("task %s: the server stops the run: %s", self.task_id, stop)
            if self.on_stop is not None:
                self.on_stop(str(stop))

    def _take_for_finish(self) -> bool:
        """Closing, with one small batch left: it goes with the finish instead (`hand_over`)."""
        if not (self.hand_over and self._closed and self._pending and len(self._pending) <= self.max_batch
                and sum(m["_bytes"] for m in self._pending) <= HANDED_OVER_BYTES):
            return False
        self.handed_over += [Message(m["seq"], m["kind"], m["content"]) for m in self._pending]
        self._pending.clear()
        return True

    async def send_handed_over(self) -> None:
        """No finish carries them after all (the run goes back to the queue): sent on their own."""
        if self.handed_over:
            try:
                await self.api.upload(self.task_id, MessageBatch(tuple(self.handed_over)))
            except ServerError as e:
                log.error("task %s: %d messages could not be sent (%s); they stay in the raw log",
                          self.task_id, len(self.handed_over), e)

    async def _send_some(self) -> None:
        while self._pending or self._usage_due():
            if self._take_for_finish():  # (the finish carries the final usage too)
                return
            batch = self._next_batch()
            usage = self.usage if self._usage_due() else None
            try:
                self._answered(await self.api.upload(self.task_id, MessageBatch(
                    tuple(Message(m["seq"], m["kind"], m["content"]) for m in batch), Usage.from_mapping(usage))),
                    usage)
            except ServerError as e:
                if usage is not None and e.status == 422:  # a server that takes no usage: messages first
                    self._usage_sent = usage
                    continue
                if e.status in (0, 413) and len(batch) > 1:  # refused or cut off for its size: smaller batches
                    self._batch_bytes = max(1, self._batch_bytes // 2)
                    if e.status == 413:
                        continue
                if 400 <= e.status < 500 and e.status not in (408, 429):
                    log.error("task %s: the server refused %d messages (%s); they stay in the raw log",
                              self.task_id, len(batch), e)
                    del self._pending[: len(batch)]  # only the refused batch; the rest still goes
                    self._usage_sent = usage or self._usage_sent
                    continue
                raise
            except Exception:  # one bad batch never ends the upload of the rest
                log.exception("task %s: %d messages could not be sent; they stay in the raw log",
                              self.task_id, len(batch))
                del self._pending[: len(batch)]
                self._usage_sent = usage or self._usage_sent
                continue
            del self._pending[: len(batch)]
            if not self._closed and len(self._pending) < self.max_batch:
                return  # what came meanwhile waits its turn (min_gap): one request for a burst, not two

    async def _loop(self) -> None:
        while True:
            # Nothing to send: sleep until a message comes (an idle agent costs nothing). Then
            # give the batch `interval` to fill, unless it is full or we are closing.
            if not self._pending and not self._usage_due() and not self._closed:
                await self._arrived.wait()
            self._arrived.clear()
            if len(self._pending) < self.max_batch and not self._closed:
                loop = asyncio.get_running_loop()
                wait = max(self.interval, self._last_sent + self.min_gap - loop.time())
                try:
                    await asyncio.wait_for(self._wake.wait(), wait)
                except asyncio.TimeoutError:
                    pass
            self._wake.clear()
            self._last_sent = asyncio.get_running_loop().time()
            # Until it goes through (close() bounds the wait): a batch is never skipped or reordered.
            try:
                await first_then_backoff(self._send_some, None, retry_on=lambda e: isinstance(e, ServerError),
                                         before_sleep=self._retrying)
            except Exception:  # the loop outlives anything one round does (R-SEC-8)
                log.exception("task %s: sending messages failed; retrying", self.task_id)
                await asyncio.sleep(1)
            if self._closed and not self._pending and not self._usage_due():
                return

    def _retrying(self, error: BaseException) -> None:
        log.warning("task %s: sending messages failed (%s); retrying", self.task_id, error)

    async def close(self, timeout: float = 30.0) -> None:
        """Flush everything (bounded), then stop."""
        self._closed = True
        self._wake.set()
        self._arrived.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout)
            except asyncio.TimeoutError:
                self._task.cancel()
                if self._take_for_finish():
                    return
                log.error("task %s: %d messages could not be sent; they stay in the raw log",
                          self.task_id, len(self._pending))
