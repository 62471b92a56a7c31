"""Members of a workspace and a person's own tokens."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from ...service import members as svc
from ..deps import Caller, get_state, user_caller
from ..models import MemberIn, RoleIn, TokenIn
from ..state import AppState
from .workspaces import _mine

router = APIRouter(prefix="/api", tags=["members"])


def _member(m, u, *, with_email: bool) -> dict:
    """Emails are for owners and admins only: a member list must not be an address book to phish."""
    out = {"user_id": u.id, "name": u.name, "role": m.role, "created_at": m.created_at.isoformat()}
    if with_email:
        out["email"] = u.email
    return out


@router.get("/workspaces/{ref}/members")
def list_members(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        ws = _mine(s, caller, ref)
        managing = caller.principal.role_in(ws.id) in ("owner", "admin")
        return [_member(m, u, with_email=managing) for m, u in svc.list_members(s, ws.id)]


@router.post("/workspaces/{ref}/members", status_code=201)
def add_member(ref: str, body: MemberIn, caller: Caller = Depends(user_caller),
               state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        ws = _mine(s, caller, ref)
        user, token = svc.add_member(s, ws.id, caller.user_id, name=body.name, email=body.email, role=body.role,
                                     address=caller.address)
    out = {"user_id": user.id, "name": user.name, "email": user.email, "role": body.role, "token": token}
    if token is None:
        out["note"] = (f"{user.name} already has an account: they were added without a new token and "
                       "use their own (`predictorx login`, or `predictorx web` for a sign-in link)")
    return out


@router.patch("/workspaces/{ref}/members/{user_id}")
def set_role(ref: str, user_id: str, body: RoleIn, caller: Caller = Depends(user_caller),
             state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        ws = _mine(s, caller, ref)
        m = svc.set_role(s, ws.id, caller.user_id, user_id, body.role, address=caller.address)
        out = {"user_id": m.user_id, "role": m.role}
    return out


@router.delete("/workspaces/{ref}/members/{user_id}", status_code=204)
def remove_member(ref: str, user_id: str, caller: Caller = Depends(user_caller),
                  state: AppState = Depends(get_state)) -> Response:
    with state.write() as s:
        svc.remove_member(s, _mine(s, caller, ref).id, caller.user_id, user_id, address=caller.address)
    return Response(status_code=204)


def _token(t) -> dict:
    return {"id": t.id, "name": t.name, "created_at": t.created_at.isoformat(),
            "expires_at": t.expires_at.isoformat() if t.expires_at else None}


@router.get("/tokens")
def list_tokens(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [_token(t) for t in svc.list_tokens(s, caller.user_id)]


@router.post("/tokens", status_code=201)
def create_token(body: TokenIn, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        tok, raw = svc.create_token(s, caller.user_id, body.name, body.days, address=caller.address)
        return {**_token(tok), "token": raw}


@router.delete("/tokens/{token_id}", status_code=204)
def revoke_token(token_id: str, caller: Caller = Depends(user_caller),
                 state: AppState = Depends(get_state)) -> Response:
    with state.write() as s:
        svc.revoke_token(s, caller.user_id, token_id, address=caller.address)
    return Response(status_code=204)
