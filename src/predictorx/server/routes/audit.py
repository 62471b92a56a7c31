"""The audit log for owners and admins (issue 28 §4; service/audit.py): a page at a time, newest
first, or the whole of it as JSON Lines."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ...service import audit
from ..deps import Caller, get_state, user_caller
from ..state import AppState

router = APIRouter(prefix="/api", tags=["audit"])


@router.get("/audit")
def audit_page(since: datetime | None = Query(default=None, description="only events at or after this time"),
               actor: str | None = Query(default=None, max_length=500, description="a member's name or user id"),
               action: str | None = Query(default=None, max_length=60, description="e.g. secret or secret.set"),
               before: int | None = Query(default=None, ge=1, le=2**62, description="the cursor of the next page"),
               limit: int = Query(default=100, ge=1, le=audit.PAGE_MAX),
               caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        rows, more = audit.page(s, caller.workspace_id, role=caller.principal.role_in(caller.workspace_id),
                                since=since, actor=actor, action=action, before=before, limit=limit)
        return {"events": [audit.describe(r) for r in rows], "next_before": more}


@router.get("/audit/export")
def audit_export(since: datetime | None = Query(default=None),
                 actor: str | None = Query(default=None, max_length=500),
                 caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> StreamingResponse:
    """JSON Lines, oldest first (read in one transaction, before the answer starts)."""
    with state.read() as s:
        lines = list(audit.export(s, caller.workspace_id, role=caller.principal.role_in(caller.workspace_id),
                                  since=since, actor=actor))
    return StreamingResponse(iter(lines), media_type="application/x-ndjson",
                             headers={"Content-Disposition": 'attachment; filename="audit.jsonl"'})


class RetentionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    days: int | None = Field(default=None, ge=0, le=36_500,
                             description="days to keep events (0: for ever; null: the server's default)")


@router.get("/audit/retention")
def retention(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        audit.require_reader(caller.principal.role_in(caller.workspace_id))
        return audit.retention_of(s, caller.workspace_id)


@router.put("/audit/retention")
def set_retention(body: RetentionIn, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        return audit.set_retention(s, caller.workspace_id, body.days, role=caller.principal.role_in(caller.workspace_id),
                                   actor_id=caller.user_id, address=caller.address)
