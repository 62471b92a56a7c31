from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from ...service import auth, serialize
from ...service.errors import Conflict, NotFound
from ...store.schema import Member, User, Workspace
from ..deps import Caller, get_principal, get_state, user_caller
from ..models import WorkspaceCreate, WorkspaceUpdate
from ..state import AppState

router = APIRouter(prefix="/api", tags=["workspaces"])


@router.get("/me")
def me(principal: auth.Principal = Depends(get_principal), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        user = s.get(User, principal.user_id) if principal.user_id else None
        return {"kind": principal.kind, "user": None if user is None else {"id": user.id, "name": user.name},
                "workspace_ids": principal.workspace_ids, "daemon_id": principal.daemon_id,
                "task_id": principal.task_id}


@router.get("/workspaces")
def list_workspaces(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        rows = s.scalars(select(Workspace).join(Member, Member.workspace_id == Workspace.id)
                         .where(Member.user_id == caller.user_id).order_by(Workspace.created_at))
        return [serialize.workspace(w) for w in rows]


@router.post("/workspaces", status_code=201)
def create_workspace(body: WorkspaceCreate, request: Request, caller: Caller = Depends(user_caller),
                     state: AppState = Depends(get_state)) -> dict:
    slug = auth.slugify(body.slug or body.name)
    try:
        with state.write() as s:
            ws = Workspace(name=body.name, slug=slug, repos=body.repos)
            s.add(ws)
            s.flush()
            s.add(Member(workspace_id=ws.id, user_id=caller.user_id, role="owner"))
    except IntegrityError:
        raise Conflict(f"a workspace with slug {slug!r} exists; choose another --slug") from None
    request.app.state.token_cache.clear()  # memberships changed: cached principals are stale
    return serialize.workspace(ws)


def _mine(s, caller: Caller, ref: str) -> Workspace:  # noqa: ANN001
    ws = s.get(Workspace, ref) or s.scalar(select(Workspace).where(Workspace.slug == ref))
    if ws is None or ws.id not in caller.principal.workspace_ids:
        raise NotFound(f"workspace {ref!r} not found; `predictorx workspace list` shows yours")
    return ws


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
            ws.name = body.name
        if body.repos is not None:
            ws.repos = list(dict.fromkeys(body.repos))
    return serialize.workspace(ws)


@router.post("/login-link", status_code=201)
def login_link(request: Request, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """A single-use browser sign-in link for the caller (`predictorx web`)."""
    with state.write() as s:
        code = auth.mint_login_code(s, caller.user_id)
    base = str(request.base_url).rstrip("/")
    return {"url": f"{base}/login?code={code}", "expires_in_s": int(auth.LOGIN_CODE_TTL.total_seconds())}
