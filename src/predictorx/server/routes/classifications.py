"""Classification (R-HAR-2): try the table on any text, see an issue's classifications, and record
a judgement where the table did not decide (reason mandatory)."""

from __future__ import annotations

from typing import Optional

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from ...service import auth
from ...service import classification as svc
from ...workflows.classify import classify
from ..deps import Caller, get_caller, get_state
from ..state import AppState
from .workflows import acting_agent, agent_id_for, issue_for, library

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


@router.post("/api/classify")
def classify_text(body: TextIn, caller: Caller = Depends(get_caller)) -> dict:
    return classify(body.text).as_dict()


@router.get("/api/issues/{ref}/classifications")
def list_(ref: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [svc.as_dict(c) for c in svc.list_for(s, issue_for(s, caller, ref))]


@router.post("/api/issues/{ref}/classifications")
def judge(ref: str, body: JudgementIn, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    lib = library()
    with state.write() as s:
        issue = issue_for(s, caller, ref)
        p = caller.principal
        by = f"agent task {p.task_id}" if p.kind == "task" else f"user {p.user_id}"
        agent_id = auth.task_of(s, p).agent_id if p.kind == "task" else (
            agent_id_for(s, caller, issue, body.agent) if (body.agent or issue.assignee_type == "agent") else None)
        return svc.as_dict(svc.judge(s, lib, issue, category=body.category, reason=body.reason, by=by,
                                     agent_id=agent_id, folio=body.folio, by_agent=acting_agent(s, caller)))
