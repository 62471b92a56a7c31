from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from ...service import agents as svc
from ...service import runnability, serialize
from ..deps import Caller, get_state, user_caller
from ..models import AgentCreate, AgentUpdate
from ..state import AppState

router = APIRouter(prefix="/api/agents", tags=["agents"])


def _out(s, a) -> dict:
    """An agent, with why no daemon can run it now (`cannot_run`, null when one can; issue 26 §2)."""
    return {**serialize.agent(a), "cannot_run": runnability.agent_blocker(s, a)}


@router.get("")
def list_agents(archived: bool = Query(default=False, description="the archived agents instead"),
                caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [_out(s, a) for a in svc.list_agents(s, caller.workspace_id, archived=archived)]


@router.post("", status_code=201)
def create_agent(body: AgentCreate, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        return _out(s, svc.create_agent(s, caller.workspace_id, owner_id=caller.user_id, address=caller.address,
                                                **body.model_dump()))


@router.get("/{ref}")
def get_agent(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        return _out(s, svc.find_agent(s, caller.workspace_id, ref))


@router.patch("/{ref}")
def update_agent(ref: str, body: AgentUpdate, caller: Caller = Depends(user_caller),
                 state: AppState = Depends(get_state)) -> dict:
    """Only the fields sent change; `"model": null` or `"runtime": null` clears them."""
    with state.write() as s:
        agent = svc.find_agent(s, caller.workspace_id, ref)
        return _out(s, svc.update_agent(s, agent, actor_id=caller.user_id, address=caller.address,
                                                **body.model_dump(exclude_unset=True)))


@router.post("/{ref}/archive")
def archive_agent(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """Out of lists and assignment; its runs keep their history and its name. Deleting an agent
    that has runs is refused: this is what keeps them."""
    with state.write() as s:
        agent = svc.find_agent(s, caller.workspace_id, ref)
        return serialize.agent(svc.archive_agent(s, agent, actor_id=caller.user_id,
                                                 actor_role=caller.principal.role_in(caller.workspace_id)))


@router.post("/{ref}/restore")
def restore_agent(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        agent = svc.find_agent(s, caller.workspace_id, ref)
        return serialize.agent(svc.restore_agent(s, agent, actor_id=caller.user_id,
                                                 actor_role=caller.principal.role_in(caller.workspace_id)))


@router.delete("/{ref}", status_code=204)
def delete_agent(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> None:
    with state.write() as s:
        svc.delete_agent(s, svc.find_agent(s, caller.workspace_id, ref), actor_id=caller.user_id,
                         actor_role=caller.principal.role_in(caller.workspace_id))
