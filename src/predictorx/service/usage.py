"""A run's usage as its daemon reports it (issue 27 §1): the latest figures with each message batch
while the run goes on, the final ones with its finish. One row per run (`run_usage`), priced
each time it changes (service/pricing.py); who and what it belongs to is copied in once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session

from ..store import direct
from ..store.schema import Issue, utcnow
from ..store.usage_schema import RunUsage
from . import pricing, usage_days

COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


_run_usage: Any = RunUsage.__table__
_READ = select(_run_usage).where(_run_usage.c.task_id == bindparam("u_task"))
_PERSON = select(Issue.__table__.c.created_by).where(Issue.__table__.c.id == bindparam("u_issue"))
_INSERT = insert(_run_usage)
_CHANGED = (*COUNTS, "total_tokens", "model", "cost_micros", "cost_source", "final", "updated_at")
_UPDATE = (update(_run_usage).where(_run_usage.c.task_id == bindparam("u_task"))
           .values(**{k: bindparam(f"u_{k}") for k in _CHANGED}))


def record(session: Session, task: Any, usage: dict[str, Any], *, final: bool = False) -> Any | None:
    """Keep `usage` (the daemon's UsageIn, as a dict) as the run's figures. A run's usage only
    grows: an older report arriving late changes nothing. None: the report said nothing; else the
    run's figures (a RunUsage's attributes). Core statements built once, on the session's
    connection: every message batch of a run comes here, and the ORM's load and flush of the row
    were a third of the batch's server CPU (issue 30)."""
    counts = {k: int(usage.get(k) or 0) for k in COUNTS}
    if not any(counts.values()) and usage.get("cost_usd") is None:
        return None
    conn = session.connection()
    found = direct.first(conn, _READ, {"u_task": task.id})
    row = SimpleNamespace(**found._mapping) if found is not None else None
    before = usage_days.snapshot(row) if row is not None else None
    if row is None:
        started = task.started_at or task.dispatched_at or utcnow()
        person = direct.first(conn, _PERSON, {"u_issue": task.issue_id})
        row = SimpleNamespace(task_id=task.id, workspace_id=task.workspace_id, day=started.strftime("%Y-%m-%d"),
                              project_id=task.project_id, agent_id=task.agent_id, issue_id=task.issue_id,
                              person_id=person[0] if person is not None else None, model=None,
                              **{k: 0 for k in COUNTS}, total_tokens=0, cost_micros=None, cost_source=None,
                              final=False)
    elif row.final and not final:
        return row  # a late live report after the final one
    total = counts["input_tokens"] + counts["output_tokens"] + counts["cache_read_tokens"] + counts["cache_write_tokens"]
    if total < (row.total_tokens or 0) and not final:
        return row
    for key, value in counts.items():
        setattr(row, key, value)
    row.total_tokens = total
    row.model = usage.get("model") or row.model
    priced = {**counts, "model": row.model, "cost_usd": usage.get("cost_usd")}
    row.cost_micros, row.cost_source = pricing.cost_of(session, task.workspace_id, priced)
    row.final = row.final or final
    row.updated_at = utcnow()
    if found is None:
        conn.execute(_INSERT, vars(row))
    else:
        direct.rows(conn, _UPDATE, {"u_task": task.id, **{f"u_{k}": getattr(row, k) for k in _CHANGED}})
    usage_days.add(session, row, before, usage_days.snapshot(row))  # the rollups' day sums
    return row


def of_task(session: Session, task_id: str) -> dict[str, Any] | None:
    row = session.get(RunUsage, task_id)
    return describe(row) if row is not None else None


def describe(row: RunUsage) -> dict[str, Any]:
    return {"model": row.model, **{k: getattr(row, k) for k in COUNTS}, "total_tokens": row.total_tokens,
            "cost_usd": pricing.dollars(row.cost_micros), "cost_source": row.cost_source or "unknown",
            "final": row.final}


def of_tasks(session: Session, task_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The usage of each of these runs that reported any (the runs lists of the pages)."""
    if not task_ids:
        return {}
    return {row.task_id: describe(row) for row in session.scalars(select(RunUsage).where(RunUsage.task_id.in_(task_ids)))}
