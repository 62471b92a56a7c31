from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from fastapi.concurrency import run_in_threadpool

from ... import resources as registry
from ...service import forgepolicy
from ...service import projects as svc
from ...service import serialize
from ..deps import Caller, get_state, user_caller
from ..models import ProjectCreate, ProjectUpdate, ResourceIn, ResourcePatch
from ..daemoncheck import check_with_daemon
from ..state import AppState

router = APIRouter(prefix="/api/projects", tags=["projects"])


@router.get("")
def list_projects(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [serialize.project(p) for p in svc.list_projects(s, caller.workspace_id, oldest_first=True)]


@router.post("", status_code=201)
async def create_project(body: ProjectCreate, caller: Caller = Depends(user_caller),
                         state: AppState = Depends(get_state)) -> dict:
    for i, r in enumerate(body.resources):
        await check_with_daemon(state, caller.workspace_id, r.resource_type, r.resource_ref, f"resource {i + 1}: ",
                                actor_id=caller.user_id)

    def work() -> dict:
        with state.write() as s:
            p = svc.create_project(s, caller.workspace_id, caller.user_id, title=body.title,
                                   description=body.description, status=body.status, priority=body.priority,
                                   lead_id=body.lead_id, resources=[r.model_dump() for r in body.resources])
            return serialize.project(p, svc.list_resources(s, p.id))
    return await run_in_threadpool(work)


@router.get("/{project_id}")
def get_project(project_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        p = svc.get_project(s, caller.workspace_id, project_id)
        return serialize.project(p, svc.list_resources(s, p.id))


@router.patch("/{project_id}")
def update_project(project_id: str, body: ProjectUpdate, caller: Caller = Depends(user_caller),
                   state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        p = svc.get_project(s, caller.workspace_id, project_id)
        changes = body.model_dump(exclude_unset=True)
        changes.pop("forge_policy", None)
        if body.forge_policy is not None:  # one bad value aborts the whole update (the transaction)
            forgepolicy.set_policy(p, body.forge_policy.model_dump(exclude_unset=True))
        svc.update_project(s, p, **{k: v for k, v in changes.items() if v is not None})
        return serialize.project(p, svc.list_resources(s, p.id))


@router.delete("/{project_id}", status_code=204)
def delete_project(project_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> Response:
    with state.write() as s:
        s.delete(svc.get_project(s, caller.workspace_id, project_id))
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
    await check_with_daemon(state, caller.workspace_id, body.resource_type, body.resource_ref,
                            actor_id=caller.user_id)

    def work() -> dict:
        with state.write() as s:
            p = svc.get_project(s, caller.workspace_id, project_id)
            row = svc.add_resource(s, p, caller.user_id, resource_type=body.resource_type,
                                   resource_ref=body.resource_ref, label=body.label, position=body.position)
            return serialize.resource(row)
    return await run_in_threadpool(work)


@router.get("/{project_id}/resources/{resource_id}")
def get_resource(project_id: str, resource_id: str, caller: Caller = Depends(user_caller),
                 state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        p = svc.get_project(s, caller.workspace_id, project_id)
        return serialize.resource(svc.get_resource(s, p, resource_id))


@router.patch("/{project_id}/resources/{resource_id}")
async def update_resource(project_id: str, resource_id: str, body: ResourcePatch,
                          caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    patch = body.model_dump(exclude_unset=True)

    def current() -> tuple[str, dict]:
        with state.read() as s:
            row = svc.get_resource(s, svc.get_project(s, caller.workspace_id, project_id), resource_id)
            return row.resource_type, row.resource_ref
    rtype, ref = await run_in_threadpool(current)
    merged = registry.merge_patch(ref, {k: v for k, v in (patch.get("resource_ref") or {}).items() if k != "label"})
    if merged != ref:
        await check_with_daemon(state, caller.workspace_id, rtype, merged, actor_id=caller.user_id)

    def work() -> dict:
        with state.write() as s:
            p = svc.get_project(s, caller.workspace_id, project_id)
            return serialize.resource(svc.update_resource(s, p, resource_id, patch, actor_id=caller.user_id))
    return await run_in_threadpool(work)


@router.delete("/{project_id}/resources/{resource_id}", status_code=204)
def remove_resource(project_id: str, resource_id: str, caller: Caller = Depends(user_caller),
                    state: AppState = Depends(get_state)) -> Response:
    with state.write() as s:
        svc.remove_resource(s, svc.get_project(s, caller.workspace_id, project_id), resource_id)
    return Response(status_code=204)
