"""The server's OpenID providers (issue 28 §1): added, listed, removed and given group → role
rules by the server's operator (`predictorx server oidc …`, which runs on the server's machine
against its database: there is no API for it, as for `server rotate-key`). The client secret is
sealed at once (service/secretbox.py) and never shown again: a listing says only whether one is set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.oidc_schema import OidcProvider
from ..store.schema import Workspace
from . import audit, oidc_discovery, secretbox
from .errors import Conflict, Invalid, NotFound

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,59}$")
ROLES = ("member", "admin", "owner")
DEFAULT_SCOPES = "openid email profile"


@dataclass(frozen=True)
class ProviderView:
    """What may be shown of a provider: never its secret."""

    id: str
    name: str
    display_name: str
    issuer: str
    client_id: str
    secret_set: bool
    scopes: str
    role_map: list[dict[str, str]]


def view(p: OidcProvider) -> ProviderView:
    return ProviderView(p.id, p.name, p.display_name, p.issuer, p.client_id, p.client_secret_sealed is not None,
                        p.scopes, list(p.role_map or []))


def _check_issuer(issuer: str) -> str:
    parts = urlsplit(issuer)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme not in ("https", "http") or not parts.hostname or (parts.scheme == "http" and not loopback):
        raise Invalid("the issuer must be an https:// URL (http:// only on this machine's loopback address)")
    if parts.query or parts.fragment:
        raise Invalid("the issuer URL has no query or fragment")
    return issuer


def add(session: Session, *, name: str, issuer: str, client_id: str, client_secret: str | None,
        display_name: str | None = None, scopes: str = DEFAULT_SCOPES) -> OidcProvider:
    if not NAME.match(name):
        raise Invalid("a provider's name is lower-case letters, digits and dashes (at most 60), e.g. `okta`")
    if session.scalar(select(OidcProvider.id).where(OidcProvider.name == name)) is not None:
        raise Conflict(f"there is a provider named {name!r} already; remove it first or pick another name")
    if not client_id.strip():
        raise Invalid("the client id is empty")
    if "openid" not in scopes.split():
        raise Invalid("the scopes must include `openid`")
    row = OidcProvider(name=name, display_name=(display_name or name).strip()[:200], issuer=_check_issuer(issuer),
                       client_id=client_id.strip(), scopes=" ".join(scopes.split()), role_map=[])
    session.add(row)
    session.flush()
    if client_secret:
        secretbox.seal_into(row, "client_secret_sealed", client_secret)
    session.flush()
    audit.record(session, workspace_id=None, actor_id=None, action="oidc.configure", target=f"provider:{name}",
                 detail={"change": "add", "issuer": row.issuer, "client_id": row.client_id})
    return row


def all_providers(session: Session) -> list[OidcProvider]:
    return list(session.scalars(select(OidcProvider).order_by(OidcProvider.name)))


def named(session: Session, name: str) -> OidcProvider:
    row = session.scalar(select(OidcProvider).where(OidcProvider.name == name))
    if row is None:
        raise NotFound(f"no OpenID provider named {name!r}; `predictorx server oidc list` shows them")
    return row


def remove(session: Session, name: str) -> None:
    row = named(session, name)
    oidc_discovery.forget(row.issuer)
    session.delete(row)
    audit.record(session, workspace_id=None, actor_id=None, action="oidc.configure", target=f"provider:{name}",
                 detail={"change": "remove"})


def client_secret(row: OidcProvider) -> str | None:
    """The one place a provider's client secret is opened: just before a call to its token endpoint."""
    return secretbox.unseal_from(row, "client_secret_sealed") if row.client_secret_sealed else None


def _workspace(session: Session, ref: str) -> Workspace:
    ws = session.get(Workspace, ref) or session.scalar(select(Workspace).where(Workspace.slug == ref))
    if ws is None:
        raise NotFound(f"no workspace {ref!r} on this server")
    return ws


def map_group(session: Session, name: str, *, value: str, workspace: str, role: str,
              claim: str = "groups") -> dict[str, Any]:
    """A rule: a person whose `claim` holds (or equals) `value` has `role` in `workspace`."""
    if role not in ROLES:
        raise Invalid(f"the role is one of {', '.join(ROLES)}")
    if not value.strip() or not claim.strip():
        raise Invalid("a rule needs a claim and a value")
    row = named(session, name)
    ws = _workspace(session, workspace)
    rule = {"claim": claim.strip(), "value": value.strip(), "workspace_id": ws.id, "role": role}
    rules = [r for r in (row.role_map or []) if (r["claim"], r["value"], r["workspace_id"])
             != (rule["claim"], rule["value"], rule["workspace_id"])]
    row.role_map = [*rules, rule]  # a new list: the JSON column sees the change
    audit.record(session, workspace_id=ws.id, actor_id=None, action="oidc.configure", target=f"provider:{name}",
                 detail={"change": "map", "claim": rule["claim"], "value": rule["value"], "role": role})
    return rule


def unmap_group(session: Session, name: str, *, value: str, workspace: str, claim: str = "groups") -> None:
    row = named(session, name)
    ws = _workspace(session, workspace)
    rules = [r for r in (row.role_map or []) if (r["claim"], r["value"], r["workspace_id"]) != (claim, value, ws.id)]
    if len(rules) == len(row.role_map or []):
        raise NotFound(f"provider {name!r} has no rule for {claim}={value!r} in that workspace")
    row.role_map = rules
    audit.record(session, workspace_id=ws.id, actor_id=None, action="oidc.configure", target=f"provider:{name}",
                 detail={"change": "unmap", "claim": claim, "value": value})


def buttons(session: Session) -> list[tuple[str, str]]:
    """(name, display name) of each provider: the sign-in page's "Sign in with …" buttons."""
    return [(p.name, p.display_name) for p in all_providers(session)]
