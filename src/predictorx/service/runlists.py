"""Runs a page at a time (issue 26 §6): the workspace's runs by state, an agent's runs, what a
daemon holds now. Newest first; a page is `limit` runs and says whether more follow.

The states are the words the Runs page filters by: running (a daemon has it), waiting (queued
for a daemon, or waiting for its local folder), failed, and all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import HOLDING_STATUSES, TASK_STATUSES, Task
from .errors import Invalid

RUN_STATES: dict[str, tuple[str, ...]] = {
    "all": TASK_STATUSES,
    "running": ("dispatched", "running"),
    "waiting": ("queued", "waiting_local_directory"),
    "failed": ("failed",),
}
PAGE_SIZE = 50
MAX_PAGE = 10_000


@dataclass(frozen=True)
class RunPage:
    tasks: list[Task]
    page: int
    more: bool


def states_of(state: str) -> tuple[str, ...]:
    if state not in RUN_STATES:
        raise Invalid(f"show runs that are {', '.join(RUN_STATES)}, not {state!r}")
    return RUN_STATES[state]


def page_of_runs(session: Session, workspace_id: str, *, state: str = "all", agent_id: str | None = None,
                 page: int = 1, limit: int | None = None) -> RunPage:
    """Page `page` (from 1) of the workspace's runs in `state`, optionally of one agent."""
    limit = limit or PAGE_SIZE
    if not 1 <= page <= MAX_PAGE:
        raise Invalid(f"page must be from 1 to {MAX_PAGE}")
    q = select(Task).where(Task.workspace_id == workspace_id, Task.status.in_(states_of(state)))
    if agent_id is not None:
        q = q.where(Task.agent_id == agent_id)
    rows = list(session.scalars(q.order_by(Task.created_at.desc(), Task.id.desc())
                                .offset((page - 1) * limit).limit(limit + 1)))
    return RunPage(rows[:limit], page, len(rows) > limit)


def held_by_daemon(session: Session, workspace_id: str, daemon_id: str, limit: int = 200) -> list[Task]:
    """The runs a daemon holds now (claimed, waiting for a folder, or running)."""
    return list(session.scalars(select(Task).where(Task.workspace_id == workspace_id, Task.daemon_id == daemon_id,
                                                   Task.status.in_(HOLDING_STATUSES))
                                .order_by(Task.created_at.desc()).limit(limit)))


def recent_on_daemon(session: Session, workspace_id: str, daemon_id: str, limit: int = 10) -> list[Task]:
    """The daemon's latest finished runs."""
    return list(session.scalars(select(Task).where(Task.workspace_id == workspace_id, Task.daemon_id == daemon_id,
                                                   Task.status.not_in(HOLDING_STATUSES))
                                .order_by(Task.created_at.desc()).limit(limit)))
