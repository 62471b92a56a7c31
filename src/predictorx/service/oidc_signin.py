"""Signing in through an OpenID provider (issue 28 §1): the authorization code flow with PKCE,
state and nonce, for the browser and for the CLI (its loopback address), and the device grant.

A sign-in starts here (`begin`): a random state, nonce and PKCE verifier, kept server-side (the
state only as its SHA-256, the verifier sealed) for 10 minutes and tied to the browser that started
it (a random value in a cookie, also kept as a hash). The provider sends the browser back with a
code and the state (`finish`): the state is spent at once, in its own transaction — whatever
follows, it never opens a second sign-in (a replayed callback is refused) — then the code is
exchanged (client secret + verifier) and the ID token validated (service/oidc_tokens.py: signature,
issuer, audience, expiry, nonce). Then, in one transaction, the person (service/oidc_accounts.py)
and their roles (service/oidc_roles.py), and what the caller asked for: a web session token, or a
single-use code for the CLI's loopback address.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from authlib.common.security import generate_token
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ..store.oidc_schema import OidcLogin, OidcProvider, OidcSession
from ..store.schema import Token, utcnow
from . import audit, auth, oidc_accounts, oidc_discovery, oidc_providers, oidc_roles, secretbox
from .errors import Invalid
from .oidc_tokens import IdTokenRefused, validate_id_token
from .transactions import Transactions

LOGIN_TTL = timedelta(minutes=10)
CLI_SESSION_TTL = timedelta(days=30)


class SignInRefused(auth.Unauthorized):
    """A sign-in that cannot go on: the sentence says why and what to do."""


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass(frozen=True)
class Started:
    url: str
    #: The browser's half of the binding (a cookie); None for the device grant.
    browser_secret: str | None


def _loopback(redirect: str | None) -> str | None:
    if redirect is None:
        return None
    parts = urlsplit(redirect)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "::1", "localhost") or not parts.port \
            or parts.query or parts.fragment or len(redirect) > 200:
        raise Invalid("the CLI's address must be http://127.0.0.1:PORT/… on its own machine")
    return redirect


def begin(session: Session, provider_name: str, *, redirect_uri: str, cli_redirect: str | None = None) -> Started:
    """A new sign-in: the URL to send the browser to at the provider."""
    provider = oidc_providers.named(session, provider_name)
    document = oidc_discovery.metadata(provider.issuer)
    forget_old(session)
    state, nonce, verifier, browser = (generate_token(43), generate_token(32), generate_token(64),
                                       secrets.token_urlsafe(32))
    row = OidcLogin(provider_id=provider.id, state_hash=_hash(state), browser_hash=_hash(browser),
                    purpose="cli" if cli_redirect else "web", nonce=nonce, redirect=_loopback(cli_redirect),
                    expires_at=utcnow() + LOGIN_TTL, interval=0)
    session.add(row)
    session.flush()
    secretbox.seal_into(row, "code_verifier_sealed", verifier)
    url = prepare_grant_uri(document["authorization_endpoint"], provider.client_id, "code",
                            redirect_uri=redirect_uri, scope=provider.scopes, state=state, nonce=nonce,
                            code_challenge=create_s256_code_challenge(verifier), code_challenge_method="S256")
    return Started(url, browser)


def forget_old(session: Session) -> None:
    """Sign-ins under way that expired (an anonymous caller can start many): gone, so the table
    holds at most what ten minutes of starts made."""
    session.execute(delete(OidcLogin).where(OidcLogin.expires_at < utcnow()))


@dataclass(frozen=True)
class _Pending:
    provider_id: str
    issuer: str
    client_id: str
    client_secret: str | None
    nonce: str
    verifier: str
    purpose: str
    redirect: str | None


def _spend(session: Session, state: str, browser_secret: str | None) -> _Pending:
    row = session.scalar(select(OidcLogin).where(OidcLogin.state_hash == _hash(state)).with_for_update())
    if row is None or row.purpose not in ("web", "cli"):
        raise SignInRefused("this sign-in is not one this server started (unknown state); start again from the "
                            "sign-in page")
    if row.used_at is not None:
        raise SignInRefused("this sign-in was used already (a replayed state); start again from the sign-in page")
    if row.expires_at < utcnow():
        raise SignInRefused("this sign-in took longer than 10 minutes; start again from the sign-in page")
    if not browser_secret or not secrets.compare_digest(_hash(browser_secret), row.browser_hash or ""):
        raise SignInRefused("this sign-in was started in another browser; start again from this browser's "
                            "sign-in page")
    row.used_at = utcnow()
    provider = session.get(OidcProvider, row.provider_id)
    assert provider is not None  # (a provider's removal removes its sign-ins)
    return _Pending(provider.id, provider.issuer, provider.client_id, oidc_providers.client_secret(provider),
                    row.nonce or "", secretbox.unseal_from(row, "code_verifier_sealed"), row.purpose, row.redirect)


def token_request(issuer: str, client_id: str, client_secret: str | None, form: dict[str, str]) -> dict[str, Any]:
    """POST to the provider's token endpoint (client_secret_basic); its JSON answer, or a sentence."""
    import httpx2

    body = form if client_secret else {**form, "client_id": client_id}
    try:
        with oidc_discovery.http_client() as client:
            response = client.post(oidc_discovery.metadata(issuer)["token_endpoint"], data=body,
                                   auth=(client_id, client_secret) if client_secret else httpx2.USE_CLIENT_DEFAULT)
    except httpx2.HTTPError as e:
        raise oidc_discovery.ProviderUnavailable(f"the OpenID provider's token endpoint did not answer "
                                                 f"({type(e).__name__})") from None
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise oidc_discovery.ProviderUnavailable(f"the OpenID provider's token endpoint answered "
                                                 f"{response.status_code} without JSON")
    return data


@dataclass(frozen=True)
class SignedIn:
    user_id: str
    token: str
    purpose: str
    redirect: str | None
    changes: list[oidc_roles.RoleChange]


def finish(tx: Transactions, *, state: str, code: str, browser_secret: str | None, redirect_uri: str,
           now: Callable[[], float] | None = None, address: str | None = None) -> SignedIn:
    """The provider's answer: the state spent, the code exchanged, the ID token validated, then the
    person signed in (a web session token, or for the CLI a single-use code)."""
    with tx.write() as s:
        pending = _spend(s, state, browser_secret)
    answer = token_request(pending.issuer, pending.client_id, pending.client_secret,
                           {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                            "code_verifier": pending.verifier})
    if "id_token" not in answer:
        raise SignInRefused(f"the provider refused the sign-in: {_provider_error(answer)}")
    claims = validate_id_token(answer["id_token"], issuer=pending.issuer, client_id=pending.client_id,
                               nonce=pending.nonce, now=now() if now else None,
                               access_token=_text(answer.get("access_token")))
    return complete(tx, pending.provider_id, claims, purpose=pending.purpose, redirect=pending.redirect,
                    address=address)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _provider_error(answer: dict[str, Any]) -> str:
    error = str(answer.get("error") or "no ID token")[:100]
    detail = str(answer.get("error_description") or "")[:300]
    return f"{error} ({detail})" if detail else error


def complete(tx: Transactions, provider_id: str, claims: dict[str, Any], *, purpose: str,
             redirect: str | None = None, address: str | None = None) -> SignedIn:
    """One transaction: the person found or made, their roles mapped, a token for what was asked."""
    with tx.write() as s:
        provider = s.get(OidcProvider, provider_id)
        if provider is None:
            raise SignInRefused("that OpenID provider was removed from this server while you signed in")
        user = oidc_accounts.person_for(s, provider, claims)
        changes = oidc_roles.apply(s, provider, user.id, claims)
        _audit(s, provider.name, user.id, purpose, changes, address)
        if purpose == "web":
            token = auth.mint(s, "user", name=f"web session ({provider.name})", user_id=user.id,
                              ttl=auth.WEB_SESSION_TTL)
            s.flush()
            token_id = s.scalar(select(Token.id).where(Token.token_hash == auth.hash_token(token)))
            s.add(OidcSession(token_id=token_id, provider_id=provider.id))
        elif purpose == "cli":
            token = auth.mint_login_code(s, user.id)
        else:
            token = auth.mint(s, "user", name=f"CLI sign-in ({provider.name})", user_id=user.id, ttl=CLI_SESSION_TTL)
        return SignedIn(user.id, token, purpose, redirect, changes)


def _audit(s: Session, provider: str, user_id: str, purpose: str, changes: list[oidc_roles.RoleChange],
           address: str | None) -> None:
    """One sign-in event, and one event per membership the group mapping changed (service/audit.py)."""
    audit.record(s, workspace_id=None, actor_id=user_id, action="sign_in", target="web" if purpose == "web" else "cli",
                 detail={"method": "oidc", "provider": provider}, address=address)
    for change in changes:
        action = ("member.add" if change.before is None else "member.remove" if change.after is None
                  else "member.role")
        audit.record(s, workspace_id=change.workspace_id, actor_id=None, action=action, target=f"user:{user_id}",
                     detail={"from": change.before, "to": change.after, "by": f"group mapping of {provider}"},
                     address=address)


def end_session_url(session: Session, token_id: str, post_logout_redirect_uri: str) -> str | None:
    """Where to send the browser so the provider signs the person out too (RP-initiated logout), for
    a web session its sign-in made; None for any other session or a provider without it."""
    row = session.get(OidcSession, token_id)
    if row is None:
        return None
    provider = session.get(OidcProvider, row.provider_id)
    if provider is None:
        return None
    try:
        end = oidc_discovery.endpoint(provider.issuer, "end_session_endpoint")
    except oidc_discovery.ProviderUnavailable:
        return None
    if not end:
        return None
    from authlib.common.urls import add_params_to_uri

    return add_params_to_uri(end, [("client_id", provider.client_id),
                                   ("post_logout_redirect_uri", post_logout_redirect_uri)])


__all__ = ["IdTokenRefused", "SignInRefused", "Started", "SignedIn", "begin", "finish", "complete",
           "end_session_url", "token_request"]
