"""Budgets (issue 27 §2): limits on what a workspace, a project or an agent spends per UTC day or
month, in money or tokens. "warn" (soft) says so — on the usage page, `predictorx budget list`
and the API; "stop" (hard) holds new runs queued, with a wait reason naming the budget
(service/claiming.py), and stops a run whose reported usage reaches it (service/spending.py).

A run counts on the day it started (`run_usage.day`). A money budget counts the runs whose cost
is known; runs of unknown cost are counted apart and named, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import bindparam, func, or_, select, update
from sqlalchemy.orm import Session

from ..store import direct
from ..store.schema import Agent, Project, Task
from ..store.usage_schema import Budget, UsageDay
from . import pricing
from .agents import find_agent
from .errors import Invalid, NotFound
from ..protocol import Event
from .events import emit
from .projects import get_project

SCOPES = ("workspace", "project", "agent")
PERIODS = ("day", "month")
METRICS = ("cost", "tokens")
ACTIONS = ("warn", "stop")
#: How a hard budget's wait reason starts: a budget's removal clears the reasons it left.
REASON_PREFIX = "hard budget reached"


def period_start(period: str, now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%d") if period == "day" else now.strftime("%Y-%m-01")


def _limit_value(metric: str, limit: float) -> int:
    if metric == "tokens":
        if limit != int(limit):
            raise Invalid("a token budget is a whole number of tokens")
        return int(limit)
    return pricing.micros(limit)


def create(session: Session, workspace_id: str, user_id: str | None, *, scope: str, target: str | None,
           period: str, metric: str, limit: float, action: str) -> Budget:
    """A budget, or the same budget with its limit changed (one per scope, target, period, metric
    and action)."""
    if scope not in SCOPES or period not in PERIODS or metric not in METRICS or action not in ACTIONS:
        raise Invalid("scope is workspace|project|agent, period day|month, metric cost|tokens, action warn|stop")
    scope_id = None
    if scope == "project":
        if not target:
            raise Invalid("a project budget names its project")
        scope_id = get_project(session, workspace_id, target).id
    elif scope == "agent":
        if not target:
            raise Invalid("an agent budget names its agent")
        scope_id = find_agent(session, workspace_id, target).id
    elif target:
        raise Invalid("a workspace budget names no project or agent")
    budget = session.scalar(select(Budget).where(
        Budget.workspace_id == workspace_id, Budget.scope == scope, Budget.period == period,
        Budget.metric == metric, Budget.action == action,
        Budget.scope_id.is_(None) if scope_id is None else Budget.scope_id == scope_id))
    if budget is None:
        budget = Budget(workspace_id=workspace_id, scope=scope, scope_id=scope_id, period=period, metric=metric,
                        action=action, created_by=user_id)
        session.add(budget)
    budget.limit_value = _limit_value(metric, limit)
    session.flush()
    return budget


def get(session: Session, workspace_id: str, budget_id: str) -> Budget:
    budget = session.get(Budget, budget_id)
    if budget is None or budget.workspace_id != workspace_id:
        raise NotFound(f"budget {budget_id!r} not found; `predictorx budget list` shows the budgets")
    return budget


def remove(session: Session, workspace_id: str, budget_id: str) -> Budget:
    budget = get(session, workspace_id, budget_id)
    session.delete(budget)
    session.flush()
    return budget


@dataclass
class Spent:
    value: int  # micros or tokens
    unknown_runs: int  # runs whose cost is unknown (a money budget cannot count them)


def spent(session: Session, budget: Budget, now: datetime | None = None) -> Spent:
    """From the day sums (service/usage_days.py): a day's or month's rows of one key."""
    column = UsageDay.cost_micros if budget.metric == "cost" else UsageDay.total_tokens
    dim, key = {"project": ("project", budget.scope_id), "agent": ("agent", budget.scope_id)}.get(
        budget.scope, ("all", ""))
    q = select(func.coalesce(func.sum(column), 0), func.coalesce(func.sum(UsageDay.unknown_cost_runs), 0)).where(
        UsageDay.workspace_id == budget.workspace_id, UsageDay.dim == dim, UsageDay.key == key,
        UsageDay.day >= period_start(budget.period, now))
    value, unknown = session.execute(q).one()
    return Spent(int(value), int(unknown) if budget.metric == "cost" else 0)


def _amount(metric: str, value: int) -> str:
    return f"${value / pricing.MICROS:,.2f}" if metric == "cost" else f"{value:,} tokens"


def scope_name(session: Session, budget: Budget) -> str:
    if budget.scope == "project":
        title = session.scalar(select(Project.title).where(Project.id == budget.scope_id))
        return f"project “{title or budget.scope_id}”"
    if budget.scope == "agent":
        name = session.scalar(select(Agent.name).where(Agent.id == budget.scope_id))
        return f"agent {name or budget.scope_id}"
    return "the workspace"


def title(session: Session, budget: Budget) -> str:
    """"the workspace: $5.00 a day (stop)" — what the budget is, in words."""
    return (f"{scope_name(session, budget)}: {_amount(budget.metric, budget.limit_value)} a {budget.period}"
            f" ({budget.action})")


def reached_reason(session: Session, budget: Budget, used: Spent) -> str:
    this = "today" if budget.period == "day" else "this month"
    return (f"{REASON_PREFIX}: {scope_name(session, budget)} may spend {_amount(budget.metric, budget.limit_value)}"
            f" a {budget.period} and has spent {_amount(budget.metric, used.value)} {this}; an owner or admin can"
            " raise or remove it (`predictorx budget list`), or it resets with the next "
            f"{budget.period} (UTC)")


def describe(session: Session, budget: Budget, now: datetime | None = None) -> dict[str, Any]:
    used = spent(session, budget, now)
    limit = budget.limit_value
    money = budget.metric == "cost"
    state = "reached" if used.value >= limit else "warning" if limit and used.value >= 0.8 * limit else "ok"
    return {"id": budget.id, "scope": budget.scope, "target_id": budget.scope_id,
            "target": scope_name(session, budget), "period": budget.period, "metric": budget.metric,
            "limit": pricing.dollars(limit) if money else limit, "action": budget.action,
            "spent": pricing.dollars(used.value) if money else used.value,
            "unknown_cost_runs": used.unknown_runs, "state": state, "title": title(session, budget),
            "since": period_start(budget.period, now)}


def list_budgets(session: Session, workspace_id: str) -> list[dict[str, Any]]:
    rows = session.scalars(select(Budget).where(Budget.workspace_id == workspace_id)
                           .order_by(Budget.scope, Budget.period, Budget.metric, Budget.action, Budget.created_at))
    return [describe(session, b) for b in rows]


#: Whether the workspace has a hard budget at all: on every claim, so built once and run straight
#: on psycopg (store/direct.py) like the rest of the claim path.
_ANY_HARD = (select(Budget.__table__.c.id).where(Budget.__table__.c.workspace_id == bindparam("b_ws"),
                                                 Budget.__table__.c.action == "stop").limit(1))


def _hard(session: Session, workspace_id: str) -> list[Budget]:
    if direct.first(session.connection(), _ANY_HARD, {"b_ws": workspace_id}) is None:
        return []  # the claim's common case: one indexed read, nothing more
    return list(session.scalars(select(Budget).where(Budget.workspace_id == workspace_id, Budget.action == "stop")))


@dataclass
class Blocks:
    """What reached hard budgets hold back now: everything, or some projects' and agents' runs."""

    workspace: str | None
    projects: dict[str, str]
    agents: dict[str, str]

    def reason_for(self, project_id: str | None, agent_id: str) -> str | None:
        return self.workspace or self.agents.get(agent_id) or (self.projects.get(project_id) if project_id else None)


def blocks(session: Session, workspace_id: str, *, project_id: str | None = None,
           agent_id: str | None = None) -> Blocks | None:
    """The reached hard budgets of the workspace (only those concerning this project or agent, if
    given); None when none is reached — the claim's common case, one small indexed read."""
    found = Blocks(None, {}, {})
    for budget in _hard(session, workspace_id):
        if budget.scope == "project" and project_id is not None and budget.scope_id != project_id:
            continue
        if budget.scope == "agent" and agent_id is not None and budget.scope_id != agent_id:
            continue
        used = spent(session, budget)
        if used.value < budget.limit_value:
            continue
        reason = reached_reason(session, budget, used)
        if budget.scope == "workspace":
            found.workspace = found.workspace or reason
        elif budget.scope == "project":
            found.projects.setdefault(budget.scope_id or "", reason)
        else:
            found.agents.setdefault(budget.scope_id or "", reason)
    return found if (found.workspace or found.projects or found.agents) else None


def hold_queued(session: Session, workspace_id: str, found: Blocks) -> None:
    """Queued tasks that reached hard budgets hold back say so (their wait reason)."""
    _task: Any = Task.__table__
    groups: list[tuple[Any, str]] = []
    if found.workspace:
        groups.append((_task.c.workspace_id == workspace_id, found.workspace))
    else:
        groups += [(_task.c.agent_id == a, r) for a, r in found.agents.items()]
        groups += [(_task.c.project_id == p, r) for p, r in found.projects.items()]
    changed = 0
    for where, reason in groups:
        changed += session.execute(  # type: ignore[attr-defined]
            update(_task).where(_task.c.workspace_id == workspace_id, _task.c.status == "queued", where,
                                or_(_task.c.wait_reason.is_(None), _task.c.wait_reason != reason))
            .values(wait_reason=reason)).rowcount or 0
    if changed:
        emit(session, workspace_id, Event.TASK_CHANGED, status="queued")


def release_held(session: Session, workspace_id: str) -> None:
    """A budget changed or went: queued tasks it held lose its reason, and daemons look again."""
    _task: Any = Task.__table__
    session.execute(update(_task).where(_task.c.workspace_id == workspace_id, _task.c.status == "queued",
                                        _task.c.wait_reason.startswith(REASON_PREFIX))
                    .values(wait_reason=None))
    emit(session, workspace_id, Event.TASK_QUEUED)
    emit(session, workspace_id, Event.TASK_CHANGED, status="queued")
