"""Role bindings of a project: which agent or member holds a lane's role (R-HAR-3). Binding who may
sign off is a privilege: owners and admins only."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from ...service import workflow_roles as svc
from ...service.agents import find_agent
from ...service.errors import Forbidden
from ...service.members import find_member_user, role_of
from ...service.projects import get_project
from ..deps import Caller, get_state, user_caller
from ..state import AppState

router = APIRouter(tags=["roles"])


class BindIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: str = Field(min_length=1, max_length=100)
    kind: Literal["agent", "member"]
    name: str = Field(min_length=1, max_length=200, description="The agent's or member's name (or id).")


def _out(b) -> dict:
    return {"id": b.id, "project_id": b.project_id, "role": b.role, "kind": b.principal_type,
            "principal_id": b.principal_id}


@router.get("/api/projects/{project}/roles")
def list_(project: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [_out(b) for b in svc.list_bindings(s, get_project(s, caller.workspace_id, project).id)]


@router.post("/api/projects/{project}/roles", status_code=201)
def bind(project: str, body: BindIn, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        if role_of(s, caller.workspace_id, caller.user_id) not in ("owner", "admin"):
            raise Forbidden("only a workspace owner or admin binds roles")
        p = get_project(s, caller.workspace_id, project)
        if body.kind == "agent":
            pid = find_agent(s, caller.workspace_id, body.name).id
        else:
            pid = find_member_user(s, caller.workspace_id, body.name).id
        return _out(svc.bind(s, caller.workspace_id, p.id, body.role, body.kind, pid))
