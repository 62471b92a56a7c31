from __future__ import annotations

from fastapi import APIRouter, Depends

from ...service import agents as svc
from ...service import serialize
from ..deps import Caller, get_state, user_caller
from ..models import AgentCreate
from ..state import AppState

router = APIRouter(prefix="/api/agents", tags=["agents"])


@router.get("")
def list_agents(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [serialize.agent(a) for a in svc.list_agents(s, caller.workspace_id)]


@router.post("", status_code=201)
def create_agent(body: AgentCreate, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        return serialize.agent(svc.create_agent(s, caller.workspace_id, **body.model_dump()))


@router.get("/{ref}")
def get_agent(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        return serialize.agent(svc.find_agent(s, caller.workspace_id, ref))
