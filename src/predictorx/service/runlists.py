"""Runs a page at a time (issue 26 §6): the workspace's runs by state, an agent's runs, what a
daemon holds now. Newest first; a page is `limit` runs and says whether more follow.

The states are the words the Runs page filters by: running (a daemon has it), waiting (queued
for a daemon, or waiting for its local folder), failed, and all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, defer

from ..store.schema import ACTIVE_STATUSES, HOLDING_STATUSES, TASK_STATUSES, TERMINAL_STATUSES, Task
from .errors import Invalid

RUN_STATES: dict[str, tuple[str, ...]] = {
    "all": TASK_STATUSES,
    "running": ("dispatched", "running"),
    "waiting": ("queued", "waiting_local_directory"),
    "failed": ("failed",),
}
PAGE_SIZE = 20  # a page of runs stays under issue 13's 100 KB
#: What a runs list never shows: a run's review (up to 1.5 MB), its context and its answers.
_UNSHOWN = (defer(Task.review), defer(Task.context), defer(Task.permission_answers))
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


def _newest(session: Session, where: list, statuses: tuple[str, ...] | None, n: int) -> list[Task]:
    """The `n` newest runs matching `where`, in any of `statuses` (None: any). One query per status,
    merged: each walks the (workspace, status, created) index for its status alone — a query for
    several statuses at once walks every run of the workspace newest first to find the few that
    are waiting, which on 100,000 runs took a second (bench/runs_pages.py)."""
    def query(*more: Any) -> list[Task]:
        q = select(Task).where(*where, *more).options(*_UNSHOWN)
        return list(session.scalars(q.order_by(Task.created_at.desc(), Task.id.desc()).limit(n)))
    if statuses is None:
        return query()
    if len(statuses) == 1:
        return query(Task.status == statuses[0])
    merged = [t for status in statuses for t in query(Task.status == status)]
    merged.sort(key=lambda t: (t.created_at, t.id), reverse=True)
    return merged[:n]


def page_of_runs(session: Session, workspace_id: str, *, state: str = "all", agent_id: str | None = None,
                 page: int = 1, limit: int | None = None) -> RunPage:
    """Page `page` (from 1) of the workspace's runs in `state`, optionally of one agent."""
    limit = limit or PAGE_SIZE
    if not 1 <= page <= MAX_PAGE:
        raise Invalid(f"page must be from 1 to {MAX_PAGE}")
    statuses = None if state == "all" else states_of(state)
    where = [Task.workspace_id == workspace_id] + ([Task.agent_id == agent_id] if agent_id is not None else [])
    skip = (page - 1) * limit
    rows = _newest(session, where, statuses, skip + limit + 1)[skip:]
    return RunPage(rows[:limit], page, len(rows) > limit)


def held_by_daemon(session: Session, workspace_id: str, daemon_id: str, limit: int = 200) -> list[Task]:
    """The runs a daemon holds now (claimed, waiting for a folder, or running)."""
    return _newest(session, [Task.workspace_id == workspace_id, Task.daemon_id == daemon_id], HOLDING_STATUSES, limit)


def recent_on_daemon(session: Session, workspace_id: str, daemon_id: str, limit: int = 10) -> list[Task]:
    """The daemon's latest finished runs."""
    return _newest(session, [Task.workspace_id == workspace_id, Task.daemon_id == daemon_id],
                   TERMINAL_STATUSES, limit)


def active_of_agent(session: Session, agent_id: str) -> int:
    """How many of the agent's runs are queued or going (its own index, not the workspace's)."""
    return session.scalar(select(func.count()).select_from(Task).where(
        Task.agent_id == agent_id, Task.status.in_(ACTIVE_STATUSES))) or 0
