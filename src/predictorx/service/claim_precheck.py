"""A claim that can find nothing, answered with one statement (issue 30).

A task queued for a person's agents wakes every daemon of that person (server/hub.py); they all
claim at once, one takes the task and the others' claims, run after it in turn (SQLite's BEGIN
IMMEDIATE, PostgreSQL's row locks), find nothing. Each of those checked the budgets, ran the
claim's UPDATE and then looked its daemon up. Inside the claim's transaction, after its token is
checked (auth.still_valid), one statement now says whether any task of the workspace is queued at
all (or the one asked for) and whether the daemon is still registered: when nothing is queued the
claim is answered empty — or 404 for a daemon no longer registered, as before — without the rest.
(A read before the transaction would not do: the daemons woken together all read before the
winner's claim commits.)
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, exists, select
from sqlalchemy.orm import Session

from ..store import direct
from ..store.schema import Daemon, Task
from .errors import NotFound

_task: Any = Task.__table__
_daemon: Any = Daemon.__table__


def _statement(one: bool) -> Any:
    queued = exists().where(_task.c.workspace_id == bindparam("c_ws"), _task.c.status == "queued")
    if one:
        queued = queued.where(_task.c.id == bindparam("c_task"))
    return select(queued.label("queued"), exists().where(_daemon.c.id == bindparam("c_daemon")).label("registered"))


_CHECK = {False: _statement(False), True: _statement(True)}


def nothing_to_claim(session: Session, daemon_id: str | None, workspace_id: str, task_id: str | None) -> bool:
    """Inside the claim's write transaction. True: no task it could claim is queued (answer it
    empty); False: the claim runs. NotFound, as the claim path answers it when it found nothing,
    for a daemon no longer registered (routes/daemons.py)."""
    if not daemon_id:
        return False  # (the claim path decides)
    params = {"c_ws": workspace_id, "c_daemon": daemon_id}
    if task_id:
        params["c_task"] = task_id
    row = direct.first(session.connection(), _CHECK[bool(task_id)], params)
    if row is None or row.queued:
        return False
    if not row.registered:
        raise NotFound("this daemon is no longer registered; restart it to register again")
    return True
