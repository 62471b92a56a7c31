"""Workspace members and personal tokens: how a team gets more than the first owner."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.schema import Member, Token, User, utcnow
from . import auth
from .errors import Conflict, Forbidden, Invalid, NotFound

ROLES = ("owner", "admin", "member")


def role_of(session: Session, workspace_id: str, user_id: str | None) -> str | None:
    return session.scalar(select(Member.role).where(Member.workspace_id == workspace_id, Member.user_id == user_id))


def _require_admin(session: Session, workspace_id: str, user_id: str | None) -> str:
    role = role_of(session, workspace_id, user_id)
    if role not in ("owner", "admin"):
        raise Forbidden("only a workspace owner or admin can manage members")
    return role


def list_members(session: Session, workspace_id: str) -> list[tuple[Member, User]]:
    return list(session.execute(select(Member, User).join(User, User.id == Member.user_id)
                                .where(Member.workspace_id == workspace_id).order_by(Member.created_at)).all())


def add_member(session: Session, workspace_id: str, actor_id: str | None, *, name: str, email: str | None,
               role: str) -> tuple[User, str]:
    """Add a person (new, or known by email) and give them a personal token, shown once."""
    actor_role = _require_admin(session, workspace_id, actor_id)
    if role not in ROLES:
        raise Invalid(f"role must be one of {', '.join(ROLES)}")
    if role == "owner" and actor_role != "owner":
        raise Forbidden("only an owner can add another owner")
    user = session.scalar(select(User).where(User.email == email)) if email else None
    if user is None:
        user = User(name=name, email=email)
        session.add(user)
        session.flush()
    elif role_of(session, workspace_id, user.id) is not None:
        raise Conflict(f"{user.name} is already a member of this workspace")
    session.add(Member(workspace_id=workspace_id, user_id=user.id, role=role))
    token = auth.mint(session, "user", name=f"token for {user.name}", user_id=user.id)
    return user, token


def remove_member(session: Session, workspace_id: str, actor_id: str | None, user_id: str) -> None:
    _require_admin(session, workspace_id, actor_id)
    member = session.get(Member, (workspace_id, user_id))
    if member is None:
        raise NotFound(f"no member {user_id!r} in this workspace; `predictorx workspace member list` shows them")
    if member.role == "owner":
        owners = session.scalar(select(func.count()).select_from(Member).where(
            Member.workspace_id == workspace_id, Member.role == "owner"))
        if owners <= 1:
            raise Conflict("this is the workspace's last owner; add another owner first")
    session.delete(member)


def create_token(session: Session, user_id: str, name: str, days: int | None) -> tuple[Token, str]:
    raw = auth.mint(session, "user", name=name, user_id=user_id, ttl=timedelta(days=days) if days else None)
    session.flush()
    return session.scalar(select(Token).where(Token.token_hash == auth.hash_token(raw))), raw


def list_tokens(session: Session, user_id: str) -> list[Token]:
    return list(session.scalars(select(Token).where(Token.user_id == user_id, Token.kind == "user",
                                                    Token.revoked.is_(False)).order_by(Token.created_at)))


def revoke_token(session: Session, user_id: str, token_id: str) -> Token:
    tok = session.get(Token, token_id)
    if tok is None or tok.user_id != user_id or tok.kind != "user":
        raise NotFound(f"no token {token_id!r} of yours; `predictorx token list` shows them")
    tok.revoked = True
    tok.expires_at = tok.expires_at or utcnow()
    return tok
