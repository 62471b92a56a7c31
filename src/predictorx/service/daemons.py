"""Daemons and their runtimes (R-EX-1): registration, heartbeats, online state."""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from ..store.schema import Agent, Daemon, Runtime, Token, utcnow
from . import audit, auth, tasks
from .errors import Forbidden, Invalid, NotFound
from ..protocol import Event
from .events import emit
from .liveness import daemon_timeout, heartbeat_interval, is_online  # noqa: F401  (part of this service's API)


def register(session: Session, workspace_id: str, principal: auth.Principal, *, daemon_id: str, name: str,
             hostname: str | None, version: str | None, capabilities: list[str],
             runtimes: list[dict], address: str | None = None) -> tuple[Daemon, str | None]:
    """Upsert the daemon and its runtimes (R-SEC-5).

    With a person's token: the first registration binds the daemon id to that person and answers a
    daemon token (the daemon keeps it in its own 0600 file and never needs the person's token
    again); anyone else registering that id gets 403. With a daemon token: the daemon registers
    itself again (a restart), only under its own id, and keeps its token (answered as None)."""
    d = session.get(Daemon, daemon_id)
    if principal.kind == "daemon":
        if daemon_id != principal.daemon_id:
            raise Forbidden("a daemon token registers only its own daemon id")
        if d is None or d.workspace_id != workspace_id:
            raise NotFound("this daemon is no longer registered; start it with your own token to register it again")
        owner_id = d.owner_id
    else:
        owner_id = principal.user_id
        if d is not None and d.workspace_id != workspace_id:  # 404, never a hint at another workspace
            raise NotFound("this daemon_id cannot be registered in this workspace; remove daemon_id from the "
                           "daemon's state dir to get a new one, or log in to the workspace it belongs to")
        if d is not None and d.owner_id is None and principal.role_in(workspace_id) == "owner":
            d.owner_id = owner_id  # a row from before ownership existed: an owner may adopt it
        if d is not None and d.owner_id != owner_id:
            raise Forbidden(f"daemon {daemon_id} belongs to another member: a daemon id is bound to whoever first "
                            "registered it. On your own machine, delete the `daemon_id` file in the state dir "
                            "(and `daemon_token.json`) to get a new id")
    if d is None:
        d = Daemon(id=daemon_id, workspace_id=workspace_id, name=name, owner_id=owner_id)
        session.add(d)
    d.name, d.hostname, d.version = name, hostname, version
    d.capabilities = sorted(set(capabilities))
    d.last_heartbeat_at = utcnow()
    session.flush()
    existing = {rt.provider: rt for rt in session.scalars(select(Runtime).where(Runtime.daemon_id == daemon_id))}
    for spec in runtimes:
        provider = spec.get("provider")
        if not isinstance(provider, str) or not provider:
            raise Invalid("each runtime needs a provider")
        rt = existing.pop(provider, None) or Runtime(daemon_id=daemon_id, provider=provider)
        rt.version, rt.path = spec.get("version"), spec.get("path")
        rt.capabilities = sorted(set(spec.get("capabilities") or []) | set(capabilities))
        session.add(rt)
    session.flush()
    # Agents created before any runtime existed bind to the only matching one now — only while it
    # is the only one, so a restart never captures agents meant to run on any machine.
    for rt in session.scalars(select(Runtime).where(Runtime.daemon_id == daemon_id)):
        same = session.scalar(select(func.count()).select_from(Runtime).join(Daemon, Daemon.id == Runtime.daemon_id)
                              .where(Daemon.workspace_id == workspace_id, Runtime.provider == rt.provider))
        if same != 1:
            continue
        # Only the daemon owner's own agents: a machine runs agents by its owner's consent (R-SEC-6).
        for agent in session.scalars(select(Agent).where(Agent.workspace_id == workspace_id,
                                                         Agent.provider == rt.provider,
                                                         Agent.owner_id == d.owner_id,
                                                         Agent.runtime_id.is_(None))):
            agent.runtime_id = rt.id
    tasks.orphaned_by_restart(session, d)
    if principal.kind == "daemon":
        return d, None
    # One live daemon token per daemon: a new registration by its owner supersedes the old one.
    session.execute(update(Token).where(Token.kind == "daemon", Token.daemon_id == daemon_id).values(revoked=True))
    token = auth.mint(session, "daemon", name=name, user_id=owner_id, workspace_id=workspace_id, daemon_id=daemon_id)
    audit.record(session, workspace_id=workspace_id, actor_id=owner_id, action="token.create", target=f"daemon {name}",
                 detail={"kind": "daemon", "daemon_id": daemon_id}, address=address)
    return d, token


def disconnect_owner(session: Session, workspace_id: str, user_id: str) -> list[str]:
    """A person left the workspace: their daemons' tokens and the task tokens those daemons hold
    are revoked, the daemons go offline and what they held goes back to the queue (R-SEC-5)."""
    ids = list(session.scalars(select(Daemon.id).where(Daemon.workspace_id == workspace_id,
                                                        Daemon.owner_id == user_id)))
    if not ids:
        return []
    session.execute(update(Token).where(Token.kind.in_(("daemon", "task")), Token.daemon_id.in_(ids))
                    .values(revoked=True))
    session.execute(update(Daemon).where(Daemon.id.in_(ids)).values(last_heartbeat_at=None))
    for daemon_id in ids:
        tasks.requeue_held(session, daemon_id, "its daemon's owner left the workspace")
        emit(session, workspace_id, Event.DAEMON_REVOKED, daemon_id=daemon_id)
    return ids


def daemon_of(session: Session, principal: auth.Principal) -> Daemon:
    """The daemon a daemon token stands for."""
    d = session.get(Daemon, principal.daemon_id) if principal.daemon_id else None
    if d is None:
        raise NotFound("this daemon is no longer registered; restart it to register again")
    return d


def find_daemon(session: Session, workspace_id: str, daemon_id: str | None) -> Daemon | None:
    """The daemon, or None (no id, or not one of this workspace's)."""
    d = session.get(Daemon, daemon_id) if daemon_id else None
    return d if d is not None and d.workspace_id == workspace_id else None


def get_daemon(session: Session, workspace_id: str, daemon_id: str) -> Daemon:
    d = session.get(Daemon, daemon_id)
    if d is None or d.workspace_id != workspace_id:
        raise NotFound(f"daemon {daemon_id!r} not found; `predictorx daemon list` shows the daemons")
    return d


def runtimes_of(session: Session, daemon_id: str) -> list[Runtime]:
    return list(session.scalars(select(Runtime).where(Runtime.daemon_id == daemon_id).order_by(Runtime.provider)))


def list_daemons(session: Session, workspace_id: str) -> list[Daemon]:
    return list(session.scalars(select(Daemon).where(Daemon.workspace_id == workspace_id).order_by(Daemon.name)))


def declared_capabilities(session: Session, daemon: Daemon) -> set[str]:
    """What a daemon and its runtimes say they can do."""
    caps = set(daemon.capabilities or [])
    for rt in runtimes_of(session, daemon.id):
        caps |= set(rt.capabilities or [])
    return caps
