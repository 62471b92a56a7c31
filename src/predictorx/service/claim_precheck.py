"""A claim that can find nothing, answered from one read (issue 30).

A task queued for a person's agents wakes every daemon of that person (server/hub.py); one claims
it and the others' claims find nothing. Each of those took a write transaction (on SQLite, the
database's one write lock), checked its token and the budgets, ran the claim's UPDATE and looked
its daemon up. When no task of the workspace is queued at all (or not the one asked for), no
claim can take anything: one statement says so, and says what the write path would have answered
first — a revoked token (401), then a daemon no longer registered (404), else nothing claimed.

A task queued after this read commits after it, and its own task_queued wakes the daemons again,
as it does after a claim that ran before it committed.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, exists, select
from sqlalchemy.orm import Session

from ..store import direct
from ..store.schema import Daemon, Task, Token
from .auth import Principal, Unauthorized
from .errors import NotFound

_task: Any = Task.__table__
_token: Any = Token.__table__
_daemon: Any = Daemon.__table__


def _statement(one: bool) -> Any:
    queued = exists().where(_task.c.workspace_id == bindparam("c_ws"), _task.c.status == "queued")
    if one:
        queued = queued.where(_task.c.id == bindparam("c_task"))
    valid = exists().where(_token.c.id == bindparam("c_token"), _token.c.revoked.is_not(True))  # (auth.still_valid)
    return select(valid.label("valid"), exists().where(_daemon.c.id == bindparam("c_daemon")).label("registered"),
                  queued.label("queued"))


_CHECK = {False: _statement(False), True: _statement(True)}


def nothing_to_claim(session: Session, principal: Principal, workspace_id: str, task_id: str | None) -> bool:
    """True: the claim would find nothing (answer it empty). False: it may find something (take
    the write path). Raises what the write path would: Unauthorized for a revoked token, NotFound
    for a daemon no longer registered (routes/daemons.py's claim)."""
    if not principal.daemon_id or not principal.token_id:
        return False  # (not a daemon token's principal: the write path decides)
    params = {"c_ws": workspace_id, "c_token": principal.token_id, "c_daemon": principal.daemon_id}
    if task_id:
        params["c_task"] = task_id
    row = direct.first(session.connection(), _CHECK[bool(task_id)], params)
    if row is None or not row.valid:
        raise Unauthorized("invalid or expired token: run `predictorx login` again")
    if row.queued:
        return False
    if not row.registered:
        raise NotFound("this daemon is no longer registered; restart it to register again")
    return True
