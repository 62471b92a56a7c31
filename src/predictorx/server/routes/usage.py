"""`/api/usage` and `/api/budgets` (issue 27 §1–2; service/usage_actions.py, the use cases the usage
page and the CLI call too). Members read what runs cost and the budgets; owners and admins set a
workspace's own model prices and its budgets."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from ...service import usage_actions as actions
from ..deps import Caller, get_state, user_caller
from ..models import BudgetIn, PriceIn
from ..state import AppState

router = APIRouter(prefix="/api", tags=["usage"])


def Ref():  # a fresh Query per parameter (FastAPI binds a shared one to the last name only)
    return Query(default=None, max_length=200)


@router.get("/usage")
def rollup(by: str = Query(default="agent", max_length=20), since: str | None = Query(default=None, max_length=10),
           until: str | None = Query(default=None, max_length=10), agent: str | None = Ref(),
           project: str | None = Ref(), issue: str | None = Ref(), person: str | None = Ref(),
           model: str | None = Ref(),
           caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """Runs, tokens and cost summed per `by` (agent, project, day, issue, person, model, run) over
    UTC days `since`..`until` (default: the last 30 days). `cost_usd` is None when no run's cost is
    known; `unknown_cost_runs` counts the runs left out of a cost."""
    return actions.report(state, caller.workspace_id, by=by, since=since, until=until, agent=agent,
                          project=project, issue=issue, person=person, model=model)


@router.get("/usage/runs/{task_id}")
def of_run(task_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.of_run(state, caller.workspace_id, task_id)


@router.get("/usage/prices")
def prices(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    return actions.list_prices(state, caller.workspace_id)


@router.put("/usage/prices")
def set_price(body: PriceIn, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.set_price(state, caller.workspace_id, body.model_dump())


@router.delete("/usage/prices")
def remove_price(model: str = Query(min_length=1, max_length=200), caller: Caller = Depends(user_caller),
                 state: AppState = Depends(get_state)) -> dict:
    return actions.remove_price(state, caller.workspace_id, model)


@router.get("/budgets")
def budgets(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    """Each budget with what its scope spent in its period so far and its state (ok, warning, reached)."""
    return actions.list_budgets(state, caller.workspace_id)


@router.post("/budgets", status_code=201)
def set_budget(body: BudgetIn, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.set_budget(state, caller.workspace_id, caller.user_id, body.model_dump(), address=caller.address)


@router.delete("/budgets/{budget_id}")
def remove_budget(budget_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return actions.remove_budget(state, caller.workspace_id, budget_id, user_id=caller.user_id,
                                 address=caller.address)
