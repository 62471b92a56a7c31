from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, Depends, Request

from ...service import auth, serialize
from ...service import workspaces as ws_svc
from ..deps import Caller, get_principal, get_state, user_caller
from ..models import WorkspaceCreate, WorkspaceUpdate
from ..state import AppState

if TYPE_CHECKING:  # annotations only: routes and pages reach the database through the services
    from ...store.schema import Workspace

router = APIRouter(prefix="/api", tags=["workspaces"])


@router.get("/me")
def me(principal: auth.Principal = Depends(get_principal), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        user = auth.user_of(s, principal)
        return {"kind": principal.kind, "user": None if user is None else {"id": user.id, "name": user.name},
                "workspace_ids": principal.workspace_ids, "daemon_id": principal.daemon_id,
                "task_id": principal.task_id}


@router.get("/workspaces")
def list_workspaces(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [serialize.workspace(w) for w in ws_svc.list_for_user(s, caller.user_id)]


@router.post("/workspaces", status_code=201)
def create_workspace(body: WorkspaceCreate, caller: Caller = Depends(user_caller),
                     state: AppState = Depends(get_state)) -> dict:
    slug = auth.slugify(body.slug or body.name)
    with state.write() as s:
        ws = ws_svc.create_workspace(s, caller.user_id, name=body.name, slug=slug, repos=body.repos)
    return serialize.workspace(ws)


def _mine(s, caller: Caller, ref: str) -> Workspace:
    return ws_svc.find_mine(s, caller.principal.workspace_ids, ref)


@router.get("/workspaces/{ref}")
def get_workspace(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        return serialize.workspace(_mine(s, caller, ref))


@router.patch("/workspaces/{ref}")
def update_workspace(ref: str, body: WorkspaceUpdate, caller: Caller = Depends(user_caller),
                     state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        ws = _mine(s, caller, ref)
        if body.name is not None:
            ws_svc.rename(ws, body.name)
        if body.repos is not None:
            ws_svc.set_repos(s, ws, caller.user_id, body.repos)
    return serialize.workspace(ws)


@router.post("/login-link", status_code=201)
def login_link(request: Request, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """A single-use browser sign-in link for the caller (`predictorx web`)."""
    with state.write() as s:
        code = auth.mint_login_code(s, caller.user_id)
    base = str(request.base_url).rstrip("/")
    return {"url": f"{base}/login?code={code}", "expires_in_s": int(auth.LOGIN_CODE_TTL.total_seconds())}
