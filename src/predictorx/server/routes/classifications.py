"""Classification (R-HAR-2): try the workspace's table on any text, see an issue's classifications,
record a judgement where the table did not decide (reason mandatory), and manage the workspace's
own rule files (issue 24 §6: the table is data; docs/workflows.md)."""

from __future__ import annotations

from typing import Optional

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from ...service import classification as svc
from ...service import classification_rules as rules_svc
from ...service.classification_actions import judge_as
from ..deps import Caller, get_caller, get_state
from ..state import AppState
from .workflows import issue_for

router = APIRouter(tags=["classification"])


class TextIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(max_length=100_000)


class JudgementIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: str = Field(min_length=1, max_length=40)
    reason: str = Field(max_length=10_000)
    agent: Optional[str] = Field(default=None, max_length=200)
    folio: Optional[str] = Field(default=None, max_length=40)  # content authoring: paper | document
    classification: Optional[str] = Field(default=None, max_length=36)  # which pending one; default the latest


class RulesIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str = Field(max_length=rules_svc.MAX_SOURCE)


@router.post("/api/classify")
def classify_text(body: TextIn, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        return svc.classify_text(s, caller.workspace_id, body.text)


@router.get("/api/issues/{ref}/classifications")
def list_(ref: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [svc.as_dict(c) for c in svc.list_for(s, issue_for(s, caller, ref))]


@router.post("/api/issues/{ref}/classifications")
def judge(ref: str, body: JudgementIn, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    return judge_as(state, caller.principal, caller.workspace_id, ref, category=body.category, reason=body.reason,
                    folio=body.folio, agent=body.agent, classification=body.classification)


@router.get("/api/classification/rules")
def rules_list(caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return rules_svc.list_rules(s, caller.workspace_id)


@router.get("/api/classification/rules/{name}")
def rules_get(name: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        return rules_svc.get_rules(s, caller.workspace_id, name)


@router.put("/api/classification/rules/{name}")
def rules_put(name: str, body: RulesIn, caller: Caller = Depends(get_caller),
              state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        return rules_svc.put_rules(s, caller.workspace_id, name, body.source, f"user {caller.user_id}")


@router.delete("/api/classification/rules/{name}", status_code=204)
def rules_delete(name: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> None:
    with state.write() as s:
        rules_svc.remove_rules(s, caller.workspace_id, name)
