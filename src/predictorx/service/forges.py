"""A workspace's forge connections (issue 22 §1): add, list, change, remove, test, and which one a
repository URL belongs to.

The credential and the webhook secret are sealed (service/secretbox.py) the moment they arrive
and are never answered back: a connection is described by "set, last 4". `connection_of` is the
one place the credential is opened, just before a forge call (never inside a transaction: the
caller reads the row, leaves the session, then calls the forge); `webhook_secret_of` is the one
place the webhook secret is, for the receiver's signature check. A fresh webhook secret is shown
once, in the answer to add and to rotate-webhook-secret, for the person to paste into the forge.
"""

from __future__ import annotations

import logging
import re
import secrets
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..forges import registry
from ..forges.base import Connection, Forge, ForgeRefused, ForgeUnavailable, RepoRef
from ..store.schema import ForgeConnection, PullRequest, new_id
from . import forgetrust, secretbox
from .errors import Conflict, Forbidden, Invalid, NotFound, ServiceError

log = logging.getLogger("predictorx.forges")

#: PR states that still need their connection (pushed branch, open or draft PR).
LIVE_PR_STATES = ("pushed", "open", "draft")
#: git's HTTP basic-auth user name per kind (base.Connection.git_username).
GIT_USERNAMES = {"github": "x-access-token", "gitlab": "oauth2"}
WEBHOOK_PATH = "/api/forges/{id}/webhook"
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_TOKEN = 4000


class ForgeCallFailed(ServiceError):
    """A forge said no (its own sentence, a 4xx here) or could not be reached (502)."""


def forge_of(kind: str) -> Forge:
    try:
        return registry.get(kind)
    except registry.UnknownForge as e:
        raise Invalid(str(e)) from None


def normalise_base_url(url: str, what: str = "base_url") -> str:
    """scheme://host[:port][/path], lower-case scheme and host, no default port, no trailing
    slash; no user, password, query or fragment (a token goes in the credential, not the URL)."""
    text = (url or "").strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise Invalid(f"{what} {text!r} is not a URL") from None
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname:
        raise Invalid(f"{what} must be an http(s) URL with a host, like https://github.com or "
                      f"https://gitlab.example.com (got {text!r})")
    if parts.username or parts.password:
        raise Invalid(f"{what} must not carry a user or password: give the token as the credential "
                      "(`--token-stdin`), never in a URL")
    if parts.query or parts.fragment:
        raise Invalid(f"{what} must not have a query or fragment (got {text!r})")
    scheme = parts.scheme.lower()
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def host_of(base_url: str) -> str:
    """host[:port] of a normalised base URL (the `host` column)."""
    return urlsplit(base_url).netloc


def _credential(token: str) -> str:
    token = (token or "").strip()
    if not token:
        raise Invalid("the credential (an access token) is empty")
    if len(token) < 8:
        raise Invalid("the credential is too short to be an access token (its last 4 characters are shown)")
    if len(token) > MAX_TOKEN or any(c.isspace() or ord(c) < 32 for c in token):
        raise Invalid("the credential must be one access token: no spaces or line breaks, at most "
                      f"{MAX_TOKEN} characters")
    return token


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _name(name: str) -> str:
    """A name people type on command lines and in URLs: letters, digits, . _ - (no spaces)."""
    name = (name or "").strip()
    if not NAME.fullmatch(name):
        raise Invalid(f"a connection's name is 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or "
                      f"digit (e.g. gh, gitlab-work); got {name[:100]!r}")
    return name


def list_connections(session: Session, workspace_id: str) -> list[ForgeConnection]:
    return list(session.scalars(select(ForgeConnection).where(ForgeConnection.workspace_id == workspace_id)
                                .order_by(ForgeConnection.created_at, ForgeConnection.name)))


def get_connection(session: Session, workspace_id: str, ref: str) -> ForgeConnection:
    """By id or name, in this workspace only (another workspace's is not found, R-SEC-2)."""
    row = session.get(ForgeConnection, ref)
    if row is None or row.workspace_id != workspace_id:
        row = session.scalar(select(ForgeConnection).where(ForgeConnection.workspace_id == workspace_id,
                                                           ForgeConnection.name == ref))
    if row is None:
        raise NotFound(f"forge connection {ref!r} not found; `predictorx forge list` shows this workspace's")
    return row


def _flush_named(session: Session, name: str) -> None:
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(f"a forge connection named {name!r} already exists in this workspace; pick another "
                       "name or update that one") from None


def add_connection(session: Session, workspace_id: str, actor_id: str | None, *, kind: str, name: str,
                   base_url: str, credential: str, api_url: str | None = None,
                   members_may_merge: bool = False) -> tuple[ForgeConnection, str]:
    """The new row and its webhook secret in plain text (shown once, never again)."""
    forge = forge_of(kind)
    name, token = _name(name), _credential(credential)
    base = normalise_base_url(base_url)
    api = normalise_base_url(api_url, "api_url") if api_url else normalise_base_url(forge.default_api_url(base),
                                                                                    "api_url")
    if session.scalar(select(func.count()).select_from(ForgeConnection).where(
            ForgeConnection.workspace_id == workspace_id, ForgeConnection.name == name)):
        raise Conflict(f"a forge connection named {name!r} already exists in this workspace; pick another name "
                       "or update that one")
    row = ForgeConnection(id=new_id(), workspace_id=workspace_id, name=name, kind=kind, base_url=base, api_url=api,
                          host=host_of(base), credential_last4=token[-4:], members_may_merge=members_may_merge,
                          created_by=actor_id)
    webhook_secret = secrets.token_urlsafe(32)
    ring = secretbox.load_keyring()
    secretbox.seal_into(row, "credential_sealed", token, ring)
    secretbox.seal_into(row, "webhook_secret_sealed", webhook_secret, ring)
    session.add(row)
    _flush_named(session, name)
    return row, webhook_secret


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


def update_connection(session: Session, row: ForgeConnection, *, name: str | None = None,
                      base_url: str | None = None, api_url: str | None = None, credential: str | None = None,
                      members_may_merge: bool | None = None) -> ForgeConnection:
    """Only what is given changes. A new base URL without an api_url takes the kind's default API.
    Pointing the connection at another host needs the token again: an admin cannot send the
    token someone else gave to an address of their choosing (and `test` it there)."""
    base = normalise_base_url(base_url) if base_url is not None else row.base_url
    if api_url is not None:
        api = normalise_base_url(api_url, "api_url")
    elif base_url is not None and base != row.base_url:
        api = normalise_base_url(forge_of(row.kind).default_api_url(base), "api_url")
    else:
        api = row.api_url
    moved = _origin(base) != _origin(row.base_url) or _origin(api) != _origin(row.api_url)
    if moved or credential is not None:
        forgetrust.forget()  # who may write was answered for the old account or address
    if moved and credential is None:
        raise Invalid("moving a connection to another host needs its token again (`--token-stdin`, or the token "
                      "field): a stored token is never sent to a new address")
    if name is not None:
        row.name = _name(name)
    row.base_url, row.api_url, row.host = base, api, host_of(base)
    if credential is not None:
        token = _credential(credential)
        secretbox.seal_into(row, "credential_sealed", token)
        row.credential_last4 = token[-4:]
    if members_may_merge is not None:
        row.members_may_merge = members_may_merge
    _flush_named(session, row.name)
    return row


def may_merge(row: ForgeConnection, role: str | None) -> bool:
    """Issue 22 §7: owners and admins merge through any connection; members only through one whose
    `members_may_merge` is set."""
    return role in ("owner", "admin") or (role == "member" and bool(row.members_may_merge))


def require_merge_allowed(row: ForgeConnection, role: str | None) -> None:
    if not may_merge(row, role):
        raise Forbidden(f"only owners and admins merge through forge connection {row.name!r}; an owner or admin "
                        f"can let members merge (`predictorx forge update {row.name} --members-may-merge`)")


def rotate_webhook_secret(session: Session, row: ForgeConnection) -> str:
    """A new webhook secret (the old one stops verifying at once); plain text, shown once."""
    fresh = secrets.token_urlsafe(32)
    secretbox.seal_into(row, "webhook_secret_sealed", fresh)
    session.flush()
    return fresh


def remove_connection(session: Session, row: ForgeConnection) -> int:
    """Refused (409) while a pushed branch or an open pull request uses it; otherwise removed with
    the records of its finished (merged, closed, discarded) pull requests — how many."""
    live = session.scalar(select(func.count()).select_from(PullRequest).where(
        PullRequest.connection_id == row.id, PullRequest.state.in_(LIVE_PR_STATES)))
    if live:
        raise Conflict(f"forge connection {row.name!r} is in use by {live} pushed branch(es) or open pull "
                       "request(s); merge or discard them first (the task pages list them), then remove it")
    finished = session.scalar(select(func.count()).select_from(PullRequest).where(
        PullRequest.connection_id == row.id)) or 0
    session.delete(row)
    session.flush()
    forgetrust.forget()
    return finished


def connection_of(row: ForgeConnection) -> Connection:
    """What a forge call needs, with the credential opened: the only place it is. Call it outside
    any transaction, right before the call, and let the result go with the call."""
    return Connection(kind=row.kind, base_url=row.base_url, api_url=row.api_url,
                      token=secretbox.unseal_from(row, "credential_sealed"),
                      git_username=GIT_USERNAMES.get(row.kind, "predictorx"))


#: The name the issue 22 contract gives it.
forge_connection = connection_of


def webhook_secret_of(row: ForgeConnection) -> str:
    """The webhook secret in plain text, for verifying a delivery (routes/forgehooks.py)."""
    return secretbox.unseal_from(row, "webhook_secret_sealed")


def call_forge(action: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run one forge call; its refusal or unavailability becomes an answer with the forge's own
    sentence (422 / 502), never a 500."""
    try:
        return fn(*args, **kwargs)
    except ForgeRefused as e:
        raise ForgeCallFailed(f"{action}: the forge refused — {e}", 422) from None
    except ForgeUnavailable as e:
        raise ForgeCallFailed(f"{action}: the forge could not be reached — {e}", 502) from None
    except ServiceError:
        raise
    except Exception as e:  # noqa: BLE001 — a client's bug is still an answer, not a 500
        log.warning("forge client failed while %s: %s", action, type(e).__name__)  # its text may quote a request
        raise ForgeCallFailed(f"{action}: the forge client failed ({type(e).__name__}); the server log has "
                              "no more, try again or report it", 502) from None


def check_connection(kind: str, conn: Connection) -> str:
    """The account the token acts as (`forge test`)."""
    return call_forge("testing the connection", forge_of(kind).whoami, conn)


def _url_host(url: str) -> tuple[str, bool] | None:
    """(host[:port], is_ssh) of a git URL: https://h[:p]/…, ssh://user@h[:p]/…, user@h:path."""
    text = url.strip()
    if "://" in text:
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError:
            return None
        if not parts.hostname:
            return None
        scheme = parts.scheme.lower()
        if scheme in ("ssh", "git+ssh", "ssh+git"):
            return parts.hostname.lower(), True
        if scheme not in DEFAULT_PORTS:
            return None
        host = parts.hostname.lower()
        return (host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"), False
    if ":" in text and "@" in text.split(":", 1)[0]:  # scp-like user@host:path
        return text.split(":", 1)[0].split("@", 1)[1].lower(), True
    return None


def connection_for_url(session: Session, workspace_id: str, url: str) -> tuple[ForgeConnection, RepoRef] | None:
    """The workspace's connection a repository URL (a github_repo resource's URL, a local folder's
    origin) belongs to, by host (and port for http) and then the forge's own reading of the path;
    None when none does. Several connections on one host: the oldest that reads the path."""
    found = _url_host(url or "")
    if found is None:
        return None
    host, ssh = found
    rows = list_connections(session, workspace_id)
    for row in rows:
        row_host = row.host.split(":", 1)[0] if ssh and not row.host.startswith("[") else row.host
        if row_host != host:
            continue
        try:
            repo = forge_of(row.kind).repo_from_url(row.base_url, url)
        except (Invalid, ValueError):
            continue
        if repo is not None:
            return row, repo
    return None


def webhook_url(public_base: str, row: ForgeConnection) -> str:
    return public_base.rstrip("/") + WEBHOOK_PATH.format(id=row.id)


def describe(row: ForgeConnection, public_base: str | None = None) -> dict[str, Any]:
    """A connection as the API, CLI and page show it: never a secret, only "set, last 4"."""
    out: dict[str, Any] = {
        "id": row.id, "workspace_id": row.workspace_id, "name": row.name, "kind": row.kind,
        "base_url": row.base_url, "api_url": row.api_url, "host": row.host,
        "credential": f"set, ••••{row.credential_last4}", "credential_last4": row.credential_last4,
        "webhook_secret": "set", "members_may_merge": bool(row.members_may_merge), "created_by": row.created_by,
        "created_at": row.created_at.isoformat() if row.created_at else None,
        "updated_at": row.updated_at.isoformat() if row.updated_at else None,
    }
    if public_base:
        out["webhook_url"] = webhook_url(public_base, row)
    return out
