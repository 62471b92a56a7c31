"""Waiting for a person's answer to an ACP agent's permission question (`ask`; agents/acp_client.py).

The question is in the task's messages; a person answers on the server (`predictorx task answer`,
service/permissions.py), which keeps the answer on the task and tells the task's daemon on its
event stream (`permission_answered`, only to that daemon). The daemon reads the task when it is
told — and once every `SAFETY_POLL_S` in case the push connection missed it (a reconnect rings too,
daemon/main.py) — never on a timer of its own per run (issue 30). `PREDICTORX_ASK_TIMEOUT_S`
(default 600) bounds the wait; then the question is answered deny.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("predictorx.daemon")

#: A look at the task without being told, in case the push connection missed the answer.
SAFETY_POLL_S = 30.0


def ask_timeout_s() -> float:
    try:
        return max(1.0, float(os.environ.get("PREDICTORX_ASK_TIMEOUT_S", "600")))
    except ValueError:
        return 600.0


def safety_poll_s() -> float:
    try:
        return max(1.0, float(os.environ.get("PREDICTORX_ASK_POLL_S", str(SAFETY_POLL_S))))
    except ValueError:
        return SAFETY_POLL_S


def asker(api: Any, task_id: str, bell: asyncio.Event) -> Callable[[str], Awaitable[str | None]]:
    """`RunSpec.ask_person` for one task: the option a person picked for `request_id`. `bell` is
    set when the server says the task was answered (or the push connection came back)."""

    async def wait(request_id: str) -> str | None:
        every = safety_poll_s()
        while True:
            bell.clear()  # before the read: an answer told while reading rings again
            try:
                task = await api.call("GET", f"/api/tasks/{task_id}", retries=0)
            except Exception as e:  # noqa: BLE001 — a failed read is tried again; the timeout bounds it
                log.debug("task %s: reading its answers failed: %s", task_id, e)
                task = None
            answer = ((task or {}).get("permission_answers") or {}).get(request_id)
            if isinstance(answer, dict) and isinstance(answer.get("option_id"), str):
                return answer["option_id"]
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(bell.wait(), every if task is not None else min(every, 5.0))

    return wait
