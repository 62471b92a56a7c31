"""Agents: a name, a provider and the runtime it runs on."""

from __future__ import annotations

import re

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..store.schema import ACTIVE_STATUSES, Agent, Daemon, Issue, Runtime, Task
from .errors import Conflict, Forbidden, Invalid, NotFound

PROVIDERS = ("claude", "codex", "gemini", "opencode", "command")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def _runtime_for(session: Session, workspace_id: str, provider: str, runtime: str | None,
                 owner_id: str | None) -> str | None:
    """The runtime an agent of `owner_id` is bound to: only runtimes on the owner's own daemons —
    a machine runs agents only by its owner's consent (R-SEC-6)."""
    q = select(Runtime, Daemon).join(Daemon, Daemon.id == Runtime.daemon_id).where(
        Daemon.workspace_id == workspace_id, Runtime.provider == provider)
    rows = list(session.execute(q).all())
    if runtime:
        match = [(rt, d) for rt, d in rows if runtime in (rt.id, rt.daemon_id)] or \
                [(rt, d) for rt, d in rows if d.name == runtime]
        if not match:
            raise NotFound(f"no {provider} runtime {runtime!r}; `predictorx daemon list` shows runtimes")
        mine = [rt for rt, d in match if d.owner_id is not None and d.owner_id == owner_id]
        if not mine:
            raise Forbidden(f"runtime {runtime!r} is on another member's machine: only a daemon's owner creates or "
                            "edits agents that run on it (anyone may assign issues to their agents)")
        return mine[0].id
    mine = [rt for rt, d in rows if d.owner_id is not None and d.owner_id == owner_id]
    if len(mine) == 1:
        return mine[0].id
    return None  # none yet, or several: any of the owner's daemons with this provider may run it


def _require_owner(agent: Agent, actor_id: str | None) -> None:
    if agent.owner_id is None or agent.owner_id != actor_id:
        raise Forbidden(f"agent {agent.name} runs on another member's machine: only its owner changes what it runs "
                        "(command, model, instructions, provider, runtime); create your own agent to run on yours")


def _check(name: str, provider: str, command: list[str] | None, max_concurrent_tasks: int) -> None:
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


def create_agent(session: Session, workspace_id: str, *, owner_id: str | None, name: str, provider: str,
                 model: str | None = None, instructions: str = "", command: list[str] | None = None,
                 max_concurrent_tasks: int = 1, runtime: str | None = None, sandbox: bool = False) -> Agent:
    """The creator owns the agent: it runs only on their daemons, only they edit it (R-SEC-6)."""
    _check(name, provider, command, max_concurrent_tasks)
    agent = Agent(workspace_id=workspace_id, name=name, provider=provider, model=model, owner_id=owner_id,
                  instructions=instructions, command=command, max_concurrent_tasks=max_concurrent_tasks,
                  sandbox=bool(sandbox),
                  runtime_id=_runtime_for(session, workspace_id, provider, runtime, owner_id))
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


_UNSET = object()


def update_agent(session: Session, agent: Agent, *, actor_id: str | None, name: str | None = None,
                 provider: str | None = None, model: str | None | object = _UNSET, instructions: str | None = None,
                 command: list[str] | None | object = _UNSET, max_concurrent_tasks: int | None = None,
                 runtime: str | None | object = _UNSET, sandbox: bool | None = None) -> Agent:
    """Change what is given; runs already queued or going keep what they were claimed with.
    Only the agent's owner — the person whose machines run it — may (R-SEC-6)."""
    _require_owner(agent, actor_id)
    new_name = name if name is not None else agent.name
    new_provider = provider if provider is not None else agent.provider
    new_command = agent.command if command is _UNSET else command
    if new_provider != "command" and command is _UNSET:
        new_command = None if provider is not None else agent.command
    new_limit = max_concurrent_tasks if max_concurrent_tasks is not None else agent.max_concurrent_tasks
    _check(new_name, new_provider, new_command, new_limit)
    if runtime is not _UNSET or new_provider != agent.provider:
        agent.runtime_id = _runtime_for(session, agent.workspace_id, new_provider,
                                        None if runtime is _UNSET else runtime, actor_id)
    agent.name, agent.provider, agent.command, agent.max_concurrent_tasks = new_name, new_provider, new_command, new_limit
    if model is not _UNSET:
        agent.model = model or None
    if instructions is not None:
        agent.instructions = instructions
    if sandbox is not None:
        agent.sandbox = sandbox
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(f"an agent named {new_name!r} already exists in this workspace") from None
    return agent


def delete_agent(session: Session, agent: Agent, *, actor_id: str | None, actor_role: str | None) -> None:
    """Refused while it has runs queued or going; issues assigned to it become unassigned. Its
    finished runs go with it. Its owner may delete it, and so may an owner or admin of the workspace
    (deleting runs nothing anywhere)."""
    if actor_role not in ("owner", "admin") and (agent.owner_id is None or agent.owner_id != actor_id):
        raise Forbidden(f"agent {agent.name} is another member's: only its owner or a workspace admin deletes it")
    active = session.scalar(select(Task.id).where(Task.agent_id == agent.id, Task.status.in_(ACTIVE_STATUSES)).limit(1))
    if active is not None:
        raise Conflict(f"{agent.name} has runs queued or going; cancel them first, then delete it")
    session.execute(update(Issue).where(Issue.assignee_type == "agent", Issue.assignee_id == agent.id)
                    .values(assignee_type=None, assignee_id=None).execution_options(synchronize_session=False))
    session.delete(agent)
    session.flush()


def runtimes_by_provider(session: Session, workspace_id: str) -> list[tuple[Runtime, Daemon]]:
    """Every runtime of the workspace's daemons, for choosing where an agent runs."""
    q = select(Runtime, Daemon).join(Daemon, Daemon.id == Runtime.daemon_id).where(
        Daemon.workspace_id == workspace_id).order_by(Runtime.provider, Daemon.name)
    return [(rt, d) for rt, d in session.execute(q).all()]


def active_run_counts(session: Session, workspace_id: str) -> dict[str, int]:
    """agent id → how many of its runs are queued or going."""
    return dict(session.execute(select(Task.agent_id, func.count())
                                .where(Task.workspace_id == workspace_id, Task.status.in_(ACTIVE_STATUSES))
                                .group_by(Task.agent_id)).all())
