"""Waiting for a person's answer to an ACP agent's permission question (`ask`; agents/acp_client.py).

The question is in the task's messages; a person answers on the server (`predictorx task answer`,
service/permissions.py), which keeps the answer on the task. The daemon reads the task every
`POLL_S` until the answer is there: a run waiting on a person is rare and slow, and the task's
own GET is what the daemon may already read. `PREDICTORX_ASK_TIMEOUT_S` (default 600) bounds the
wait; then the question is answered deny.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("predictorx.daemon")

POLL_S = 1.0


def ask_timeout_s() -> float:
    try:
        return max(1.0, float(os.environ.get("PREDICTORX_ASK_TIMEOUT_S", "600")))
    except ValueError:
        return 600.0


def asker(api: Any, task_id: str) -> Callable[[str], Awaitable[str | None]]:
    """`RunSpec.ask_person` for one task: the option a person picked for `request_id`."""

    async def wait(request_id: str) -> str | None:
        while True:
            try:
                task = await api.call("GET", f"/api/tasks/{task_id}", retries=0)
            except Exception as e:  # noqa: BLE001 — a failed read is tried again; the timeout bounds it
                log.debug("task %s: reading its answers failed: %s", task_id, e)
                task = None
            answer = ((task or {}).get("permission_answers") or {}).get(request_id)
            if isinstance(answer, dict) and isinstance(answer.get("option_id"), str):
                return answer["option_id"]
            await asyncio.sleep(POLL_S)

    return wait
