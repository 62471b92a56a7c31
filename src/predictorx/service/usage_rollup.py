"""What runs cost, summed (issue 27 §1): per run, agent, issue, project, person, model or day, over a
span of UTC days — one GROUP BY over `run_usage` on its (workspace, day) index, then names for the
few keys it returns. The API (/api/usage), `predictorx usage` and the usage page all answer this.

A cost sum counts the runs whose cost is known; `unknown_cost_runs` says how many were left out,
so a total is never passed off as complete when it is not.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Issue, Project, Task, User
from ..store.usage_schema import RunUsage, UsageDay
from . import pricing
from .errors import Invalid

GROUPS = {"agent": RunUsage.agent_id, "project": RunUsage.project_id, "day": RunUsage.day,
          "issue": RunUsage.issue_id, "person": RunUsage.person_id, "model": RunUsage.model,
          "run": RunUsage.task_id}
SUMS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens")
DEFAULT_DAYS = 30
#: Rows of one answer at most (the costliest first; days in order).
MAX_ROWS = 500


def parse_day(value: str | None, what: str) -> str | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise Invalid(f"{what} is a day, YYYY-MM-DD (got {value!r})") from None


def default_since(days: int = DEFAULT_DAYS) -> str:
    return (datetime.now(timezone.utc).date() - timedelta(days=days - 1)).isoformat()


def _filtered(q: Any, workspace_id: str, since: str, until: str | None, filters: dict[str, str | None]) -> Any:
    q = q.where(RunUsage.workspace_id == workspace_id, RunUsage.day >= since)
    if until:
        q = q.where(RunUsage.day <= until)
    for name, value in filters.items():
        if value:
            q = q.where(GROUPS[name] == value)
    return q


def _figures(row: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": int(row.runs)}
    out.update({k: int(getattr(row, k) or 0) for k in SUMS})
    known = int(row.runs) - int(row.unknown or 0)
    out["cost_usd"] = pricing.dollars(int(row.cost or 0)) if known else None
    out["unknown_cost_runs"] = int(row.unknown or 0)
    return out


def _columns() -> list[Any]:
    return [func.count().label("runs"), *(func.sum(getattr(RunUsage, k)).label(k) for k in SUMS),
            func.sum(RunUsage.cost_micros).label("cost"),
            func.sum(case((RunUsage.cost_micros.is_(None), 1), else_=0)).label("unknown")]


def rollup(session: Session, workspace_id: str, *, by: str = "agent", since: str | None = None,
           until: str | None = None, limit: int = MAX_ROWS, **filters: str | None) -> dict[str, Any]:
    """`{"by", "since", "until", "rows": [{"key", "label", runs, tokens…, cost_usd, unknown_cost_runs}],
    "totals": {…}}`. `filters`: agent/project/issue/person/model/run ids to narrow to."""
    if by not in GROUPS:
        raise Invalid(f"--by is one of {', '.join(GROUPS)}")
    since = parse_day(since, "since") or default_since()
    until = parse_day(until, "until")
    if by != "run" and not any(filters.values()):  # the day sums (usage_day): a few rows per day and key
        rows = _from_days(session, workspace_id, by, since, until, limit)
    else:  # one issue's, agent's … runs: those rows of run_usage
        key = GROUPS[by]
        q = _filtered(select(key.label("key"), *_columns()), workspace_id, since, until, filters).group_by(key)
        q = q.order_by(key) if by == "day" else q.order_by(func.sum(RunUsage.cost_micros).desc().nulls_last(), key)
        rows = list(session.execute(q.limit(limit)).all())
    labels = _labels(session, workspace_id, by, [r.key for r in rows])
    out = [{"key": r.key, "label": labels.get(r.key, r.key if r.key is not None else "—"), **_figures(r)} for r in rows]
    if len(rows) < limit:  # every group is here: their sum is the total (one scan, not two)
        totals = _summed(out)
    elif not any(filters.values()):
        totals = _summed([_figures(r) for r in _from_days(session, workspace_id, "day", since, until, 10_000)])
    else:
        totals = _figures(session.execute(_filtered(select(*_columns()), workspace_id, since, until, filters)).one())
    return {"by": by, "since": since, "until": until, "rows": out, "totals": totals}


def _from_days(session: Session, workspace_id: str, by: str, since: str, until: str | None,
               limit: int = MAX_ROWS) -> list[Any]:
    dim, key = ("all", UsageDay.day) if by == "day" else (by, UsageDay.key)
    cost = func.sum(UsageDay.cost_micros)
    unknown = func.sum(UsageDay.unknown_cost_runs)
    q = (select(key.label("key"), func.sum(UsageDay.runs).label("runs"),
                *(func.sum(getattr(UsageDay, k)).label(k) for k in SUMS), cost.label("cost"), unknown.label("unknown"))
         .where(UsageDay.workspace_id == workspace_id, UsageDay.dim == dim, UsageDay.day >= since)
         .group_by(key).having(func.sum(UsageDay.runs) > 0))  # (a key a run's model moved away from)
    if until:
        q = q.where(UsageDay.day <= until)
    q = q.order_by(key) if by == "day" else q.order_by(cost.desc().nulls_last(), key)
    rows = session.execute(q.limit(limit)).all()
    # "" is the key of runs with no project, person or model
    return [SimpleNamespace(**{**r._asdict(), "key": r.key or None}) for r in rows]


def _summed(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": sum(r["runs"] for r in rows)}
    out.update({k: sum(r[k] for r in rows) for k in SUMS})
    known = [r["cost_usd"] for r in rows if r["cost_usd"] is not None]
    out["cost_usd"] = round(sum(known), 6) if known else None
    out["unknown_cost_runs"] = sum(r["unknown_cost_runs"] for r in rows)
    return out


def _labels(session: Session, workspace_id: str, by: str, keys: list[Any]) -> dict[Any, str]:
    ids = [k for k in keys if k is not None]
    if not ids or by in ("day", "model"):
        return {}
    if by == "agent":
        return dict(session.execute(select(Agent.id, Agent.name).where(Agent.id.in_(ids))).all())
    if by == "project":
        return dict(session.execute(select(Project.id, Project.title).where(Project.id.in_(ids))).all())
    if by == "person":
        return dict(session.execute(select(User.id, User.name).where(User.id.in_(ids))).all())
    if by == "issue":
        return {i: f"#{n} {t}" for i, n, t in session.execute(
            select(Issue.id, Issue.number, Issue.title).where(Issue.id.in_(ids))).all()}
    return {t: f"#{n} · {a}" for t, n, a in session.execute(
        select(Task.id, Issue.number, Agent.name).join(Issue, Issue.id == Task.issue_id)
        .join(Agent, Agent.id == Task.agent_id).where(Task.id.in_(ids))).all()}


def this_month_by_agent(session: Session, workspace_id: str) -> dict[str, dict[str, Any]]:
    """Each agent's figures since the first of this month (UTC): the Agents page."""
    since = datetime.now(timezone.utc).strftime("%Y-%m-01")
    return {r.key: _figures(r) for r in _from_days(session, workspace_id, "agent", since, None) if r.key}


def of_issue(session: Session, workspace_id: str, issue_id: str) -> dict[str, Any]:
    """An issue's runs and their total, over all time (the issue page)."""
    return rollup(session, workspace_id, by="run", since="2000-01-01", issue=issue_id)
