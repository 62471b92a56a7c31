"""Tokens and principals (R-SEC-1, R-SEC-2).

Tokens are random strings with a kind prefix; only their SHA-256 is stored. A principal is what a
token stands for: a user (member of workspaces), a daemon (one workspace, one daemon_id) or a task
(one task: comment on its issue, set its status, check out its allowed repos, nothing more).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from ..store import direct
from ..store.schema import Agent, Member, Task, Token, User, Workspace, utcnow
from . import audit
from .errors import NotFound, ServiceError

PREFIX = {"user": "pxu_", "daemon": "pxd_", "task": "pxt_", "login": "pxl_"}
LOGIN_CODE_TTL = timedelta(minutes=15)
WEB_SESSION_TTL = timedelta(days=30)


class Unauthorized(ServiceError):
    status = 401


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def mint(session: Session, kind: str, *, name: str | None = None, user_id: str | None = None,
         workspace_id: str | None = None, daemon_id: str | None = None, task_id: str | None = None,
         ttl: timedelta | None = None) -> str:
    raw = PREFIX[kind] + secrets.token_urlsafe(32)
    session.add(Token(
        token_hash=hash_token(raw), kind=kind, name=name, user_id=user_id,
        workspace_id=workspace_id, daemon_id=daemon_id, task_id=task_id,
        expires_at=utcnow() + ttl if ttl else None,
    ))
    return raw


@dataclass
class Principal:
    kind: str
    token_id: str
    user_id: str | None = None
    workspace_ids: list[str] = field(default_factory=list)
    daemon_id: str | None = None
    task_id: str | None = None
    #: A person's role in each of their workspaces (owner | admin | member); empty for others.
    roles: dict[str, str] = field(default_factory=dict)

    @property
    def is_user(self) -> bool:
        return self.kind == "user"

    def role_in(self, workspace_id: str) -> str | None:
        return self.roles.get(workspace_id)


def authenticate(session: Session, raw: str | None) -> Principal:
    if not raw:
        raise Unauthorized("missing token: run `predictorx login` or set PREDICTORX_TOKEN")
    return authenticate_hash(session, hash_token(raw))


def authenticate_hash(session: Session, token_hash: str) -> Principal:
    """What the token with this hash stands for now (an open event stream is checked again so)."""
    tok = session.scalar(select(Token).where(Token.token_hash == token_hash))
    now = utcnow()
    if tok is None or tok.revoked or (tok.expires_at is not None and tok.expires_at < now) or tok.kind == "login":
        raise Unauthorized("invalid or expired token: run `predictorx login` again")
    if tok.kind == "user":
        rows = session.execute(select(Member.workspace_id, Member.role).where(Member.user_id == tok.user_id)
                               .order_by(Member.created_at)).all()
        return Principal("user", tok.id, user_id=tok.user_id, workspace_ids=[w for w, _ in rows],
                         roles={w: r for w, r in rows})
    if tok.kind == "task":
        task = session.get(Task, tok.task_id)
        if task is None or task.status in ("completed", "failed", "cancelled"):
            raise Unauthorized("this task token is no longer valid: its task has finished")
    return Principal(tok.kind, tok.id, workspace_ids=[tok.workspace_id], daemon_id=tok.daemon_id,
                     task_id=tok.task_id)


_REVOKED = select(Token.__table__.c.revoked).where(Token.__table__.c.id == bindparam("id")).with_for_update(read=True)


def still_valid(session: Session, principal: Principal) -> None:
    """Inside a write: the caller's token was checked before the transaction began (or came from
    the principal cache), and a revocation committed since must win — a removed member's daemon
    whose heartbeat was in flight came back online, and its claim could take the tasks the removal
    had just put back. On PostgreSQL the share lock orders this write after a revocation in flight
    (or the revocation after it); SQLite's BEGIN IMMEDIATE already does."""
    found = direct.rows(session.connection(), _REVOKED, {"id": principal.token_id})  # (a daemon's hot path)
    if not found or found[0].revoked:
        raise Unauthorized("invalid or expired token: run `predictorx login` again")


def user_of(session: Session, principal: Principal) -> User | None:
    """The person a user token stands for (None for daemon and task tokens)."""
    return session.get(User, principal.user_id) if principal.user_id else None


def task_of(session: Session, principal: Principal) -> Task | None:
    """The task a task token acts for (None for other tokens, or a task that is gone)."""
    return session.get(Task, principal.task_id) if principal.kind == "task" and principal.task_id else None


def agent_of(session: Session, principal: Principal) -> Agent | None:
    """The agent whose task a task token acts for."""
    task = task_of(session, principal)
    return session.get(Agent, task.agent_id) if task is not None else None


def may_act_on_issue(session: Session, principal: Principal, issue_id: str) -> bool:
    """A person may (their workspace was checked already); a task token only on its own issue (R-EX-4)."""
    if principal.kind == "user":
        return True
    task = task_of(session, principal)
    return task is not None and task.issue_id == issue_id


def resolve_workspace(session: Session, principal: Principal, wanted: str | None) -> Workspace:
    """The workspace a request acts in: named by id or slug, else the principal's first one.

    Anything outside the principal's workspaces answers 404, never 403 (R-SEC-2).
    """
    if wanted:
        ws = session.get(Workspace, wanted) or session.scalar(select(Workspace).where(Workspace.slug == wanted))
        if ws is None or ws.id not in principal.workspace_ids:
            raise NotFound(f"workspace {wanted!r} not found; `predictorx workspace list` shows yours")
        return ws
    if not principal.workspace_ids:
        raise NotFound("you are not a member of any workspace; create one with `predictorx workspace create`")
    return session.get(Workspace, principal.workspace_ids[0])


def workspaces_of(session: Session, principal: Principal) -> list[Workspace]:
    """The principal's workspaces by name (the web UI's workspace switcher)."""
    if not principal.workspace_ids:
        return []
    return list(session.scalars(select(Workspace).where(Workspace.id.in_(principal.workspace_ids))
                                .order_by(Workspace.name)))


_SLUG = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")[:60] or "workspace"


def bootstrap_owner(session: Session, name: str = "owner") -> tuple[str, Workspace, User] | None:
    """On the very first start: an owner, a default workspace and the owner's token."""
    if session.scalar(select(User.id).limit(1)) is not None:
        return None
    user = User(name=name)
    ws = Workspace(name="Default", slug="default", repos=[])
    session.add_all([user, ws])
    session.flush()
    session.add(Member(workspace_id=ws.id, user_id=user.id, role="owner"))
    raw = mint(session, "user", name="local owner", user_id=user.id)
    return raw, ws, user


def mint_login_code(session: Session, user_id: str) -> str:
    """A single-use code for a browser sign-in link, so no long-lived token is ever printed."""
    return mint(session, "login", name="web login link", user_id=user_id, ttl=LOGIN_CODE_TTL)


def redeem_login_code(session: Session, raw: str, name: str = "web session", *, address: str | None = None) -> str:
    """Spend a login code (once); answer a fresh web-session token for the browser's cookie (or,
    named "CLI sign-in", for `predictorx login --sso`). The sign-in is audited (service/audit.py)."""
    tok = session.scalar(select(Token).where(Token.token_hash == hash_token(raw)).with_for_update())
    if tok is None or tok.kind != "login" or tok.revoked or tok.expires_at < utcnow():
        raise Unauthorized("this sign-in link was already used or has expired; run `predictorx web` for a new one")
    tok.revoked = True
    # A "CLI sign-in" spends the single-use code that `login --sso` got at the end of its OpenID
    # sign-in (routes/sso.py): that sign-in itself was audited by service/oidc_signin.py.
    if name.startswith("web"):
        audit.record(session, workspace_id=None, actor_id=tok.user_id, action="sign_in", target="web",
                     detail={"method": "code"}, address=address)
    return mint(session, "user", name=name, user_id=tok.user_id, ttl=WEB_SESSION_TTL)


def end_web_session(session: Session, raw: str) -> str | None:
    """Sign-out: revoke the browser's web-session token (only one minted for a browser, never a
    person's own token set as a cookie by hand). Its id, or None when it was no web session."""
    tok = session.scalar(select(Token).where(Token.token_hash == hash_token(raw)))
    if tok is None or tok.kind != "user" or not (tok.name or "").startswith("web session") or tok.revoked:
        return None
    tok.revoked = True
    return tok.id


def expiry(seconds: float) -> datetime:
    return utcnow() + timedelta(seconds=seconds)
