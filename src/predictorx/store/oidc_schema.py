"""Tables of OpenID Connect sign-in (issue 28 §1): the server's providers, who signed in through
which (their subject), the sign-ins under way (state, nonce, PKCE verifier), which web sessions
came from a provider (RP-initiated logout) and what a provider's group mapping granted.
Migration 0021 mirrors this file."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .schema import TS, Base, new_id, utcnow


class OidcProvider(Base):
    """An OpenID provider this server accepts (`predictorx server oidc add`). The client secret is
    sealed (service/secretbox.py); `role_map` holds the group → workspace role rules:
    [{"claim": "groups", "value": "eng", "workspace_id": "…", "role": "admin"}, …]."""

    __tablename__ = "oidc_provider"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(60), unique=True)
    display_name: Mapped[str] = mapped_column(String(200))
    issuer: Mapped[str] = mapped_column(String(2000))
    client_id: Mapped[str] = mapped_column(String(500))
    client_secret_sealed: Mapped[str | None] = mapped_column(Text)
    scopes: Mapped[str] = mapped_column(String(500), default="openid email profile")
    role_map: Mapped[list] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class OidcIdentity(Base):
    """A person as a provider knows them: (provider, subject) → user, bound at first sign-in."""

    __tablename__ = "oidc_identity"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    provider_id: Mapped[str] = mapped_column(ForeignKey("oidc_provider.id", ondelete="CASCADE"))
    subject: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    last_sign_in_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (UniqueConstraint("provider_id", "subject", name="uq_oidc_identity_subject"),)


class OidcLogin(Base):
    """A sign-in under way: found by the SHA-256 of its state (or of a device sign-in's handle),
    spent at its first use. `browser_hash` binds a web sign-in to the browser that started it;
    `purpose`: web (a cookie), cli (a single-use code to the CLI's loopback address), device."""

    __tablename__ = "oidc_login"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    provider_id: Mapped[str] = mapped_column(ForeignKey("oidc_provider.id", ondelete="CASCADE"))
    state_hash: Mapped[str] = mapped_column(String(64), unique=True)
    browser_hash: Mapped[str | None] = mapped_column(String(64))
    purpose: Mapped[str] = mapped_column(String(10))
    nonce: Mapped[str | None] = mapped_column(String(100))
    code_verifier_sealed: Mapped[str | None] = mapped_column(Text)
    device_code_sealed: Mapped[str | None] = mapped_column(Text)
    interval: Mapped[int] = mapped_column(Integer, default=5)
    redirect: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(TS)
    used_at: Mapped[datetime | None] = mapped_column(TS)


class OidcSession(Base):
    """A web session token minted by a provider's sign-in: signing out also ends the provider's."""

    __tablename__ = "oidc_session"
    token_id: Mapped[str] = mapped_column(ForeignKey("token.id", ondelete="CASCADE"), primary_key=True)
    provider_id: Mapped[str] = mapped_column(ForeignKey("oidc_provider.id", ondelete="CASCADE"))


class OidcGrant(Base):
    """A membership role a provider's group mapping gave (or raised): taken back when no rule
    matches any more — removed, or back to `previous_role` where the person was a member before."""

    __tablename__ = "oidc_grant"
    user_id: Mapped[str] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), primary_key=True)
    provider_id: Mapped[str] = mapped_column(ForeignKey("oidc_provider.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(20))
    previous_role: Mapped[str | None] = mapped_column(String(20))
