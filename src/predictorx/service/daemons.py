"""Daemons and their runtimes (R-EX-1): registration, heartbeats, online state."""

from __future__ import annotations

import os
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Daemon, Runtime, utcnow
from . import auth, tasks
from .errors import Forbidden, Invalid, NotFound


def daemon_timeout() -> timedelta:
    """How long a daemon may stay silent before it is offline and its tasks are swept (R-EX-6)."""
    return timedelta(seconds=float(os.environ.get("PREDICTORX_DAEMON_TIMEOUT", "30")))


def is_online(d: Daemon) -> bool:
    return d.last_heartbeat_at is not None and utcnow() - d.last_heartbeat_at < daemon_timeout()


def register(session: Session, workspace_id: str, *, daemon_id: str, name: str, hostname: str | None,
             version: str | None, capabilities: list[str], runtimes: list[dict]) -> tuple[Daemon, str]:
    """Upsert the daemon and its runtimes; returns the daemon and a fresh daemon token."""
    d = session.get(Daemon, daemon_id)
    if d is not None and d.workspace_id != workspace_id:  # 404, never a hint at another workspace
        raise NotFound("this daemon_id cannot be registered in this workspace; remove daemon_id from the "
                       "daemon's state dir to get a new one, or log in to the workspace it belongs to")
    if d is None:
        d = Daemon(id=daemon_id, workspace_id=workspace_id, name=name)
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
        for agent in session.scalars(select(Agent).where(Agent.workspace_id == workspace_id,
                                                         Agent.provider == rt.provider,
                                                         Agent.runtime_id.is_(None))):
            agent.runtime_id = rt.id
    tasks.orphaned_by_restart(session, d)
    token = auth.mint(session, "daemon", name=name, workspace_id=workspace_id, daemon_id=daemon_id)
    return d, token


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
