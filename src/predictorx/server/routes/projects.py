"""Projects and their resources over the API: each change is a use case in
service/project_actions.py, which the project pages call too."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from fastapi.concurrency import run_in_threadpool

from ...service import project_actions as actions
from ...service import projects as svc
from ...service import serialize
from ..deps import Caller, get_state, user_caller
from ..models import ProjectCreate, ProjectUpdate, ResourceIn, ResourcePatch
from ..state import AppState

router = APIRouter(prefix="/api/projects", tags=["projects"])


@router.get("")
def list_projects(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [serialize.project(p) for p in svc.list_projects(s, caller.workspace_id, oldest_first=True)]


@router.post("", status_code=201)
async def create_project(body: ProjectCreate, caller: Caller = Depends(user_caller),
                         state: AppState = Depends(get_state)) -> dict:
    return await actions.create_project(state, state.hub, run_in_threadpool, caller.workspace_id, caller.user_id,
                                        body.model_dump(exclude={"resources"}),
                                        [r.model_dump() for r in body.resources])


@router.get("/{project_id}")
def get_project(project_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        p = svc.get_project(s, caller.workspace_id, project_id)
        return serialize.project(p, svc.list_resources(s, p.id))


@router.patch("/{project_id}")
def update_project(project_id: str, body: ProjectUpdate, caller: Caller = Depends(user_caller),
                   state: AppState = Depends(get_state)) -> dict:
    return actions.update_project(state, caller.workspace_id, project_id, body.model_dump(exclude_unset=True))


@router.delete("/{project_id}", status_code=204)
def delete_project(project_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> Response:
    actions.delete_project(state, caller.workspace_id, project_id)
    return Response(status_code=204)


# -- resources --------------------------------------------------------------------------------

@router.get("/{project_id}/resources")
def list_resources(project_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        p = svc.get_project(s, caller.workspace_id, project_id)
        return [serialize.resource(r) for r in svc.list_resources(s, p.id)]


@router.post("/{project_id}/resources", status_code=201)
async def add_resource(project_id: str, body: ResourceIn, caller: Caller = Depends(user_caller),
                       state: AppState = Depends(get_state)) -> dict:
    return await actions.add_resource(state, state.hub, run_in_threadpool, caller.workspace_id, caller.user_id,
                                      project_id, body.model_dump())


@router.get("/{project_id}/resources/{resource_id}")
def get_resource(project_id: str, resource_id: str, caller: Caller = Depends(user_caller),
                 state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        p = svc.get_project(s, caller.workspace_id, project_id)
        return serialize.resource(svc.get_resource(s, p, resource_id))


@router.patch("/{project_id}/resources/{resource_id}")
async def update_resource(project_id: str, resource_id: str, body: ResourcePatch,
                          caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    return await actions.update_resource(state, state.hub, run_in_threadpool, caller.workspace_id, caller.user_id,
                                         project_id, resource_id, body.model_dump(exclude_unset=True))


@router.delete("/{project_id}/resources/{resource_id}", status_code=204)
def remove_resource(project_id: str, resource_id: str, caller: Caller = Depends(user_caller),
                    state: AppState = Depends(get_state)) -> Response:
    actions.remove_resource(state, caller.workspace_id, project_id, resource_id)
    return Response(status_code=204)
