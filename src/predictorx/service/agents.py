"""Agents: a name, a provider and the runtime it runs on."""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..store.schema import Agent, Daemon, Runtime
from .errors import Conflict, Invalid, NotFound

PROVIDERS = ("claude", "codex", "gemini", "opencode", "command")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def _runtime_for(session: Session, workspace_id: str, provider: str, runtime: str | None) -> str | None:
    q = select(Runtime).join(Daemon, Daemon.id == Runtime.daemon_id).where(
        Daemon.workspace_id == workspace_id, Runtime.provider == provider)
    rows = list(session.scalars(q))
    if runtime:
        for rt in rows:
            if runtime in (rt.id, rt.daemon_id):
                return rt.id
        daemons = {d.id: d.name for d in session.scalars(select(Daemon).where(Daemon.workspace_id == workspace_id))}
        for rt in rows:
            if daemons.get(rt.daemon_id) == runtime:
                return rt.id
        raise NotFound(f"no {provider} runtime {runtime!r}; `predictorx daemon list` shows runtimes")
    if len(rows) == 1:
        return rows[0].id
    return None  # none yet, or several: any daemon with this provider may run it


def create_agent(session: Session, workspace_id: str, *, name: str, provider: str, model: str | None = None,
                 instructions: str = "", command: list[str] | None = None, max_concurrent_tasks: int = 1,
                 runtime: str | None = None) -> Agent:
    if not _NAME.match(name):
        raise Invalid("agent name must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if provider not in PROVIDERS:
        raise Invalid(f"unknown provider {provider!r}; known providers: {', '.join(PROVIDERS)}")
    if provider == "command" and not command:
        raise Invalid("a command agent needs its command line (--command 'prog arg …')")
    if command is not None and (not isinstance(command, list) or not all(isinstance(c, str) and c for c in command)):
        raise Invalid("command must be a non-empty list of strings")
    if not 1 <= max_concurrent_tasks <= 64:
        raise Invalid("max_concurrent_tasks must be between 1 and 64")
    agent = Agent(workspace_id=workspace_id, name=name, provider=provider, model=model,
                  instructions=instructions, command=command, max_concurrent_tasks=max_concurrent_tasks,
                  runtime_id=_runtime_for(session, workspace_id, provider, runtime))
    session.add(agent)
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(f"an agent named {name!r} already exists in this workspace") from None
    return agent


def find_agent(session: Session, workspace_id: str, ref: str) -> Agent:
    agent = session.get(Agent, ref)
    if agent is None or agent.workspace_id != workspace_id:
        agent = session.scalar(select(Agent).where(Agent.workspace_id == workspace_id, Agent.name == ref))
    if agent is None:
        raise NotFound(f"agent {ref!r} not found; `predictorx agent list` shows the agents")
    return agent


def list_agents(session: Session, workspace_id: str) -> list[Agent]:
    return list(session.scalars(select(Agent).where(Agent.workspace_id == workspace_id).order_by(Agent.name)))
