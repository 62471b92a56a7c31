"""The usage, price and budget use cases as `/api/usage`, `/api/budgets`, `predictorx usage|budget`
and the web's usage page call them (issue 27 §1–2): each opens its own transaction and answers a
plain dict."""

from __future__ import annotations

from typing import Any

from ..store.schema import Issue
from . import audit, budgets, pricing, spending, usage, usage_rollup
from .agents import find_agent
from .errors import NotFound
from .tasks import get_task
from .transactions import Transactions


def _filters(s: Any, workspace_id: str, refs: dict[str, str | None]) -> dict[str, str | None]:
    """Names and numbers people type (`--agent reviewer`, `--issue 12`) as the ids the rows hold."""
    out = dict(refs)
    if refs.get("agent"):
        out["agent"] = find_agent(s, workspace_id, refs["agent"] or "").id
    issue = refs.get("issue")
    if issue and issue.lstrip("#").isdigit():
        found = s.query(Issue.id).filter(Issue.workspace_id == workspace_id,
                                         Issue.number == int(issue.lstrip("#"))).scalar()
        if found is None:
            raise NotFound(f"issue {issue} not found")
        out["issue"] = found
    return out


def report(tx: Transactions, workspace_id: str, *, by: str = "agent", since: str | None = None,
           until: str | None = None, limit: int = usage_rollup.MAX_ROWS, **refs: str | None) -> dict[str, Any]:
    with tx.read() as s:
        return usage_rollup.rollup(s, workspace_id, by=by, since=since, until=until, limit=limit,
                                   **_filters(s, workspace_id, refs))


def of_run(tx: Transactions, workspace_id: str, task_id: str) -> dict[str, Any]:
    """One run's usage ("unknown" figures are None; `reported` false: its CLI said nothing)."""
    with tx.read() as s:
        get_task(s, workspace_id, task_id)
        found = usage.of_task(s, task_id)
        return {"task_id": task_id, "reported": found is not None, **(found or {})}


def of_issue(tx: Transactions, workspace_id: str, issue_id: str) -> dict[str, Any]:
    with tx.read() as s:
        return usage_rollup.of_issue(s, workspace_id, issue_id)


# -- prices ------------------------------------------------------------------------------------

def list_prices(tx: Transactions, workspace_id: str) -> list[dict[str, Any]]:
    with tx.read() as s:
        return pricing.list_prices(s, workspace_id)


def set_price(tx: Transactions, workspace_id: str, fields: dict[str, Any]) -> dict[str, Any]:
    with tx.write() as s:
        return pricing.set_price(s, workspace_id, **fields)


def remove_price(tx: Transactions, workspace_id: str, model: str) -> dict[str, Any]:
    with tx.write() as s:
        pricing.remove_price(s, workspace_id, model)
        return {"removed": model}


# -- budgets -----------------------------------------------------------------------------------

def list_budgets(tx: Transactions, workspace_id: str) -> list[dict[str, Any]]:
    with tx.read() as s:
        return budgets.list_budgets(s, workspace_id)


def set_budget(tx: Transactions, workspace_id: str, user_id: str | None, fields: dict[str, Any], *,
               address: str | None = None) -> dict[str, Any]:
    """Add a budget (or change the limit of the same one). A changed limit may free held tasks.
    Audited (issue 28 §4): what it limits, and the limit before and after."""
    with tx.write() as s:
        budget = budgets.create(s, workspace_id, user_id, **fields)
        budgets.release_held(s, workspace_id)
        described = budgets.describe(s, budget)
        audit.record(s, workspace_id=workspace_id, actor_id=user_id, action="budget.set",
                     target=f"budget:{budget.id}", detail=_budget_detail(described), address=address)
        return described


def remove_budget(tx: Transactions, workspace_id: str, budget_id: str, *, user_id: str | None = None,
                  address: str | None = None) -> dict[str, Any]:
    with tx.write() as s:
        described = budgets.describe(s, budgets.get(s, workspace_id, budget_id))
        gone = budgets.remove(s, workspace_id, budget_id)
        budgets.release_held(s, workspace_id)
        audit.record(s, workspace_id=workspace_id, actor_id=user_id, action="budget.remove",
                     target=f"budget:{gone.id}", detail=_budget_detail(described), address=address)
        return {"removed": gone.id}


def _budget_detail(described: dict[str, Any]) -> dict[str, Any]:
    return {k: described.get(k) for k in ("scope", "target", "period", "metric", "action", "limit")
            if described.get(k) is not None}


# -- what a daemon reports -----------------------------------------------------------------------

def usage_reported(s: Any, task: Any, reported: dict[str, Any] | None, *, final: bool = False) -> str | None:
    """Inside the caller's transaction (the message upload's, the finish's): spending.report."""
    return spending.report(s, task, reported, final=final)
