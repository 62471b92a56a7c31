"""An agent's variables and secrets, and the workspace's secrets granted to agents (issue 28 §2;
service/agentenv.py). Answers never hold a secret's value: its name and, when long, last four."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from ...service import agentenv
from ...service import agents as agent_svc
from ..deps import Caller, get_state, user_caller
from ..models import EnvGrantIn, EnvVarIn, WorkspaceSecretIn
from ..state import AppState

router = APIRouter(prefix="/api", tags=["secrets"])


def _role(caller: Caller) -> str | None:
    return caller.principal.role_in(caller.workspace_id)


@router.get("/agents/{ref}/env")
def list_agent_env(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        agent = agent_svc.find_agent(s, caller.workspace_id, ref)
        return agentenv.list_for_agent(s, agent, actor_id=caller.user_id, role=_role(caller))


@router.put("/agents/{ref}/env/{name}")
def set_agent_env(ref: str, name: str, body: EnvVarIn, caller: Caller = Depends(user_caller),
                  state: AppState = Depends(get_state)) -> dict:
    """Only the agent's owner; the value is never in the answer."""
    with state.write() as s:
        agent = agent_svc.find_agent(s, caller.workspace_id, ref)
        return agentenv.set_for_agent(s, agent, actor_id=caller.user_id, name=name, value=body.value,
                                      secret=body.secret, address=caller.address)


@router.delete("/agents/{ref}/env/{name}", status_code=204)
def unset_agent_env(ref: str, name: str, caller: Caller = Depends(user_caller),
                    state: AppState = Depends(get_state)) -> Response:
    with state.write() as s:
        agent = agent_svc.find_agent(s, caller.workspace_id, ref)
        agentenv.unset_for_agent(s, agent, actor_id=caller.user_id, role=_role(caller), name=name,
                                 address=caller.address)
    return Response(status_code=204)


@router.post("/agents/{ref}/grants", status_code=204)
def grant(ref: str, body: EnvGrantIn, caller: Caller = Depends(user_caller),
          state: AppState = Depends(get_state)) -> Response:
    with state.write() as s:
        agent = agent_svc.find_agent(s, caller.workspace_id, ref)
        agentenv.grant(s, agent, actor_id=caller.user_id, role=_role(caller), name=body.name, address=caller.address)
    return Response(status_code=204)


@router.delete("/agents/{ref}/grants/{name}", status_code=204)
def revoke(ref: str, name: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> Response:
    with state.write() as s:
        agent = agent_svc.find_agent(s, caller.workspace_id, ref)
        agentenv.revoke(s, agent, actor_id=caller.user_id, role=_role(caller), name=name, address=caller.address)
    return Response(status_code=204)


@router.get("/secrets")
def list_secrets(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return agentenv.list_workspace(s, caller.workspace_id, role=_role(caller))


@router.put("/secrets/{name}")
def set_secret(name: str, body: WorkspaceSecretIn, caller: Caller = Depends(user_caller),
               state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        return agentenv.set_workspace(s, caller.workspace_id, actor_id=caller.user_id, role=_role(caller), name=name,
                                      value=body.value, address=caller.address)


@router.delete("/secrets/{name}", status_code=204)
def unset_secret(name: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> Response:
    with state.write() as s:
        agentenv.unset_workspace(s, caller.workspace_id, actor_id=caller.user_id, role=_role(caller), name=name,
                                 address=caller.address)
    return Response(status_code=204)
