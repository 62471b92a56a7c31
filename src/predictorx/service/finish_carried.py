"""What a daemon's finish carries beside the outcome (protocol.FINISH_CARRIES): the run's last
messages and the handoff's git facts, stored in the finish's transaction exactly as their own
routes store them (`POST …/messages`, `POST …/harness/handoff` by the task's daemon) — one request
per task instead of three (issue 30).

Only for a task this daemon holds or held: any other is left to the finish, which refuses it (and
then nothing here is committed either). A retried finish (its first answer lost) stores nothing
twice: messages are idempotent on their seq, the handoff is the task's one row."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.orm import Session

from ..workflows.library import active_library
from ..workflows.loader import DiagramError
from . import tasks
from . import workflow_handoff

log = logging.getLogger("predictorx.server")


def store(session: Session, daemon_id: str | None, workspace_id: str, task_id: str, *,
          messages: list[dict[str, Any]], handoff: dict[str, Any] | None) -> None:
    if not messages and not handoff:
        return
    task = tasks.get_task(session, workspace_id, task_id, for_update=True)
    if task.daemon_id != daemon_id:
        return  # the finish says why
    if messages:
        tasks.append_messages(session, task, messages)
    if handoff:
        try:
            lib = active_library()
        except DiagramError as e:  # as its own route: not stored, the run's end is reported regardless
            log.warning("task %s: handoff not stored (the workflow library does not load: %s)", task_id, e)
        else:
            workflow_handoff.write(session, lib, task, daemon_part=handoff)
    session.flush()
    session.expire(task)  # the finish changes its row with a Core statement next: read it afresh after
