"""Who an ID token is on this server (issue 28 §1).

A person is known to a provider by its subject (`sub`): the first sign-in binds (provider, subject)
to an account for good. That first time, the account is one that already exists only when the
provider says the e-mail is verified (`email_verified` true) and an account has that e-mail;
otherwise a new account is made. An unverified e-mail is never used to link, and never stored: an
account holding it could later be attached by that e-mail (adding a member by e-mail attaches the
existing account), so whoever typed someone else's address at the provider would get their access.
An account made by adding a member by e-mail holds an address nobody proved (its first token went
to whoever added it): the first sign-in that proves that address takes it over, every earlier
token revoked (`_take_over`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from ..store.oidc_schema import OidcIdentity, OidcProvider
from ..store.schema import Member, Token, User, utcnow
from . import audit


def email_verified(claims: dict[str, Any]) -> bool:
    value = claims.get("email_verified")
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _display_name(claims: dict[str, Any]) -> str:
    for key in ("name", "preferred_username", "email", "sub"):
        value = claims.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:500]
    return "someone"


def person_for(session: Session, provider: OidcProvider, claims: dict[str, Any]) -> User:
    subject = str(claims["sub"])[:255]
    identity = session.scalar(select(OidcIdentity).where(OidcIdentity.provider_id == provider.id,
                                                         OidcIdentity.subject == subject))
    if identity is not None:
        identity.last_sign_in_at = utcnow()
        user = session.get(User, identity.user_id)
        assert user is not None  # (an account's removal removes its identities)
        return user
    email = claims.get("email") if isinstance(claims.get("email"), str) else None
    user = None
    if email and email_verified(claims):
        user = session.scalar(select(User).where(func.lower(User.email) == email.strip().lower()))
        if user is not None and not user.email_proven:
            _take_over(session, user)
    if user is None:
        proven = bool(email and email_verified(claims))
        user = User(name=_display_name(claims), email=email.strip()[:320] if proven and email else None,
                    email_proven=proven)
        session.add(user)
        session.flush()
    session.add(OidcIdentity(provider_id=provider.id, subject=subject, user_id=user.id))
    session.flush()
    return user


def _take_over(session: Session, user: User) -> None:
    """The person who proved the e-mail takes over the account someone made by typing it: every
    token made before (the first went to whoever added it, who may have kept it) and its daemons'
    tokens are revoked, so only this sign-in's session acts as it from now on."""
    from .daemons import disconnect_owner  # (daemons imports tasks, which imports members)

    session.execute(update(Token).where(Token.user_id == user.id, Token.kind.in_(("user", "login")))
                    .values(revoked=True))
    for workspace_id in session.scalars(select(Member.workspace_id).where(Member.user_id == user.id)):
        disconnect_owner(session, workspace_id, user.id)
        audit.record(session, workspace_id=workspace_id, actor_id=user.id, action="member.email_proven",
                     target=f"member {user.name}", detail={"user_id": user.id, "tokens_revoked": True})
    user.email_proven = True
    session.flush()
