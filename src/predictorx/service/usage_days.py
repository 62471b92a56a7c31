"""`usage_day`: the runs of each UTC day summed per agent, project, issue, person and model (and
"all"), kept in step with `run_usage` as each report is recorded — a run's change is added to the
rows of its keys (one multi-row upsert), so a rollup over months reads a few rows per day and key
instead of every run (service/usage_rollup.py; bench/usage.py). `rebuild` recomputes a workspace's
rows from `run_usage` (a backfill)."""

from __future__ import annotations

import functools
from typing import Any, cast

from sqlalchemy import Table, case, delete, func, insert, literal, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from ..store.usage_schema import RunUsage, UsageDay

DIMS = ("agent", "project", "issue", "person", "model", "all")
FIGURES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens")
SUMMED = ("runs", *FIGURES, "cost_micros", "unknown_cost_runs")
_COLUMNS = {"agent": RunUsage.agent_id, "project": RunUsage.project_id, "issue": RunUsage.issue_id,
            "person": RunUsage.person_id, "model": RunUsage.model}


def snapshot(row: Any) -> dict[str, Any]:
    """What `row` (a RunUsage, or its figures as attributes: service/usage.py) adds to its day's sums now (and under which keys)."""
    return {"runs": 1, **{k: getattr(row, k) or 0 for k in FIGURES}, "cost_micros": row.cost_micros or 0,
            "unknown_cost_runs": 1 if row.cost_micros is None else 0,
            "keys": {"agent": row.agent_id, "project": row.project_id or "", "issue": row.issue_id,
                     "person": row.person_id or "", "model": row.model or "", "all": ""}}


def add(session: Session, row: Any, before: dict[str, Any] | None, after: dict[str, Any]) -> None:
    """Move `row`'s day sums from `before` (None: a new run) to `after` (snapshots)."""
    changes: dict[tuple[str, str], dict[str, int]] = {}

    def put(dim: str, key: str, figures: dict[str, Any], sign: int) -> None:
        sums = changes.setdefault((dim, key), dict.fromkeys(SUMMED, 0))
        for name in SUMMED:
            sums[name] += sign * figures[name]

    for dim in DIMS:
        if before is not None:
            put(dim, before["keys"][dim], before, -1)
        put(dim, after["keys"][dim], after, 1)
    values = [{"workspace_id": row.workspace_id, "dim": dim, "day": row.day, "key": key, **sums}
              for (dim, key), sums in changes.items() if any(sums.values())]
    if not values:
        return
    session.execute(_upsert(session.get_bind().dialect.name), values)


@functools.cache
def _upsert(dialect: str) -> Any:
    """The upsert of one day-sum row, built once per dialect and executed with a list of rows
    (executemany): on the table, not the ORM entity — the ORM's bulk insert and a statement with
    the rows inlined compiled again on every report, ~2.5 ms of the server's CPU per message batch
    (issue 30)."""
    table = cast(Table, UsageDay.__table__)
    ins = (pg_insert if dialect == "postgresql" else sqlite_insert)(table)
    return ins.on_conflict_do_update(index_elements=["workspace_id", "dim", "day", "key"],
                                     set_={name: table.c[name] + getattr(ins.excluded, name) for name in SUMMED})


def rebuild(session: Session, workspace_id: str) -> None:
    """The workspace's day sums again from its runs (after rows were written around `record`)."""
    session.execute(delete(UsageDay).where(UsageDay.workspace_id == workspace_id))
    sums = [func.count(), *(func.sum(getattr(RunUsage, k)) for k in FIGURES),
            func.coalesce(func.sum(RunUsage.cost_micros), 0),
            func.sum(case((RunUsage.cost_micros.is_(None), 1), else_=0))]
    for dim in DIMS:
        key = literal("") if dim == "all" else func.coalesce(_COLUMNS[dim], "")
        q = (select(RunUsage.workspace_id, literal(dim), RunUsage.day, key, *sums)
             .where(RunUsage.workspace_id == workspace_id).group_by(RunUsage.workspace_id, RunUsage.day, key))
        session.execute(insert(UsageDay).from_select(["workspace_id", "dim", "day", "key", *SUMMED], q))
