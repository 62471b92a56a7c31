"""Workspace members and personal tokens: how a team gets more than the first owner."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from ..store.schema import Member, Token, User, utcnow
from . import audit, auth
from .errors import Conflict, Forbidden, Invalid, NotFound

ROLES = ("owner", "admin", "member")


def role_of(session: Session, workspace_id: str, user_id: str | None) -> str | None:
    return session.scalar(select(Member.role).where(Member.workspace_id == workspace_id, Member.user_id == user_id))


def _require_admin(session: Session, workspace_id: str, user_id: str | None) -> str:
    role = role_of(session, workspace_id, user_id)
    if role not in ("owner", "admin"):
        raise Forbidden("only a workspace owner or admin can manage members")
    return role


def _owners(session: Session, workspace_id: str) -> int:
    return session.scalar(select(func.count()).select_from(Member).where(
        Member.workspace_id == workspace_id, Member.role == "owner"))


def list_members(session: Session, workspace_id: str) -> list[tuple[Member, User]]:
    return list(session.execute(select(Member, User).join(User, User.id == Member.user_id)
                                .where(Member.workspace_id == workspace_id).order_by(Member.created_at)).all())


#: An account whose e-mail someone typed when adding it (its first token went to them) is not
#: attached by that e-mail again: whoever holds it would get this workspace (R-SEC-4).
UNPROVEN_EMAIL = ("an account with the e-mail {email} exists, but nobody has proven that address (it was typed "
                  "when someone added it, and its first token went to them), so adding it here could hand this "
                  "workspace to someone else: have the person sign in once through the workspace's OpenID "
                  "provider (which proves the address), or add them without an e-mail (a new account and "
                  "token for them)")


def add_member(session: Session, workspace_id: str, actor_id: str | None, *, name: str, email: str | None,
               role: str, address: str | None = None) -> tuple[User, str | None]:
    """Add a person. A new person gets a token for this workspace, shown once. A person who already
    has an account (known by email) is attached without a token (R-SEC-4): a token is minted only
    for whoever asked for it or for an account this call creates — otherwise adding someone's
    email would hand the adder that person's keys. They sign in with their own token. Only an
    account whose e-mail was proven is attached so (`UNPROVEN_EMAIL`)."""
    actor_role = _require_admin(session, workspace_id, actor_id)
    if role not in ROLES:
        raise Invalid(f"role must be one of {', '.join(ROLES)}")
    if role == "owner" and actor_role != "owner":
        raise Forbidden("only an owner can add another owner")
    user = session.scalar(select(User).where(User.email == email)) if email else None
    if user is not None:
        if role_of(session, workspace_id, user.id) is not None:
            raise Conflict(f"{user.name} is already a member of this workspace")
        if not user.email_proven:
            raise Conflict(UNPROVEN_EMAIL.format(email=email))
        session.add(Member(workspace_id=workspace_id, user_id=user.id, role=role))
        _audit_member(session, workspace_id, actor_id, "member.add", user, {"role": role, "new_account": False}, address)
        return user, None
    user = User(name=name, email=email)
    session.add(user)
    session.flush()
    session.add(Member(workspace_id=workspace_id, user_id=user.id, role=role))
    # Marked as issued in this workspace: removing the person from it revokes it (R-SEC-5).
    token = auth.mint(session, "user", name=f"token for {user.name}", user_id=user.id, workspace_id=workspace_id)
    _audit_member(session, workspace_id, actor_id, "member.add", user, {"role": role, "new_account": True}, address)
    return user, token


def _audit_member(session: Session, workspace_id: str, actor_id: str | None, action: str, user: User | None,
                  detail: dict, address: str | None) -> None:
    audit.record(session, workspace_id=workspace_id, actor_id=actor_id, action=action,
                 target=f"member {user.name if user else '?'}", detail={"user_id": user and user.id, **detail},
                 address=address)


def change_refusal(actor_role: str | None, member_role: str, new_role: str | None,
                   owners: int) -> Forbidden | Conflict | None:
    """Why `actor_role` may not give a member of `member_role` the role `new_role` (None: remove
    them), or None when they may: only owners and admins manage members, only owners manage
    owners, and the last owner is never removed or demoted (R-SEC-4). The Settings page asks this
    before offering a control; the service raises it."""
    if actor_role not in ("owner", "admin"):
        return Forbidden("only a workspace owner or admin can manage members")
    if (member_role == "owner" or new_role == "owner") and actor_role != "owner":
        return Forbidden("only an owner can remove, demote or promote an owner")
    if member_role == "owner" and new_role != "owner" and owners <= 1:
        return Conflict("this is the workspace's last owner; make another member owner first")
    return None


def owner_count(session: Session, workspace_id: str) -> int:
    return _owners(session, workspace_id)


def _guard_owner_change(session: Session, workspace_id: str, actor_role: str, member: Member, new_role: str | None) -> None:
    refused = change_refusal(actor_role, member.role, new_role, _owners(session, workspace_id))
    if refused is not None:
        raise refused


def find_member_user(session: Session, workspace_id: str, name: str) -> User:
    """A member of the workspace by user id or name."""
    user = session.scalar(select(User).join(Member, Member.user_id == User.id).where(
        Member.workspace_id == workspace_id, (User.id == name) | (User.name == name)))
    if user is None:
        raise NotFound(f"no member named {name!r}; `predictorx workspace member list` shows them")
    return user


def _find_member(session: Session, workspace_id: str, user_id: str) -> Member:
    member = session.get(Member, (workspace_id, user_id))
    if member is None:
        raise NotFound(f"no member {user_id!r} in this workspace; `predictorx workspace member list` shows them")
    return member


def set_role(session: Session, workspace_id: str, actor_id: str | None, user_id: str, role: str, *,
             address: str | None = None) -> Member:
    actor_role = _require_admin(session, workspace_id, actor_id)
    if role not in ROLES:
        raise Invalid(f"role must be one of {', '.join(ROLES)}")
    member = _find_member(session, workspace_id, user_id)
    _guard_owner_change(session, workspace_id, actor_role, member, role)
    before, member.role = member.role, role
    if before != role:
        _audit_member(session, workspace_id, actor_id, "member.role", session.get(User, user_id),
                      {"from": before, "to": role}, address)
    return member


def remove_member(session: Session, workspace_id: str, actor_id: str | None, user_id: str, *,
                  address: str | None = None) -> None:
    """Remove a person and everything that acts for them here (R-SEC-5): their tokens for this
    workspace, their daemons' tokens and the task tokens those daemons were given; their daemons
    go offline and the tasks they held go back to the queue."""
    actor_role = _require_admin(session, workspace_id, actor_id)
    member = _find_member(session, workspace_id, user_id)
    _guard_owner_change(session, workspace_id, actor_role, member, None)
    _audit_member(session, workspace_id, actor_id, "member.remove", session.get(User, user_id), {"role": member.role},
                  address)
    drop_membership(session, member)


def drop_membership(session: Session, member: Member) -> None:
    """The membership gone with everything that acts for it (remove_member; a group mapping that
    no longer matches, service/oidc_roles.py): the checks of who may are the caller's."""
    workspace_id, user_id = member.workspace_id, member.user_id
    session.delete(member)
    session.flush()
    from .daemons import disconnect_owner  # daemons imports tasks, which imports this package

    disconnect_owner(session, workspace_id, user_id)
    scoped = [Token.workspace_id == workspace_id]
    if role_of_any(session, user_id) is None:  # no workspace left: none of their tokens has a use
        scoped.append(Token.workspace_id.is_(None))
    session.execute(update(Token).where(Token.user_id == user_id, Token.kind.in_(("user", "login")), or_(*scoped))
                    .values(revoked=True))


def role_of_any(session: Session, user_id: str) -> str | None:
    return session.scalar(select(Member.role).where(Member.user_id == user_id).limit(1))


def create_token(session: Session, user_id: str, name: str, days: int | None, *,
                 address: str | None = None) -> tuple[Token, str]:
    raw = auth.mint(session, "user", name=name, user_id=user_id, ttl=timedelta(days=days) if days else None)
    session.flush()
    tok = session.scalar(select(Token).where(Token.token_hash == auth.hash_token(raw)))
    assert tok is not None  # (minted just now)
    audit.record(session, workspace_id=None, actor_id=user_id, action="token.create", target=f"token {name}",
                 detail={"token_id": tok.id, "days": days}, address=address)
    return tok, raw


def list_tokens(session: Session, user_id: str) -> list[Token]:
    return list(session.scalars(select(Token).where(Token.user_id == user_id, Token.kind == "user",
                                                    Token.revoked.is_(False)).order_by(Token.created_at)))


def revoke_token(session: Session, user_id: str, token_id: str, *, address: str | None = None) -> Token:
    tok = session.get(Token, token_id)
    if tok is None or tok.user_id != user_id or tok.kind != "user":
        raise NotFound(f"no token {token_id!r} of yours; `predictorx token list` shows them")
    if not tok.revoked:
        audit.record(session, workspace_id=None, actor_id=user_id, action="token.revoke", target=f"token {tok.name}",
                     detail={"token_id": tok.id}, address=address)
    tok.revoked = True
    tok.expires_at = tok.expires_at or utcnow()
    return tok
