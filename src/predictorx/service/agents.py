"""Agents: a name, a provider and the runtime it runs on."""

from __future__ import annotations

import re

from sqlalchemy import bindparam, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from .. import allowhosts
from ..agentconfig import acp_profiles, mcpconfig
from ..store.schema import ACTIVE_STATUSES, Agent, Daemon, Issue, Runtime, Task, utcnow
from . import audit
from .errors import Conflict, Forbidden, Invalid, NotFound

PROVIDERS = ("claude", "codex", "gemini", "opencode", "command", "acp")
#: How an ACP agent's permission requests are answered (agents/acp_client.py POLICIES).
PERMISSION_POLICIES = ("allow", "deny", "ask")
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
    if provider == "acp" and (problem := acp_profiles.check_command(command)):
        raise Invalid(problem)
    if command is not None and (not isinstance(command, list) or not all(isinstance(c, str) and c for c in command)):
        raise Invalid("command must be a non-empty list of strings")
    if not 1 <= max_concurrent_tasks <= 64:
        raise Invalid("max_concurrent_tasks must be between 1 and 64")


def _ask_timeout(seconds: int | None) -> int | None:
    """An `ask` question's wait: at least 10 s (a person must have time to read it), at most a day."""
    if seconds is not None and not 10 <= seconds <= 86_400:
        raise Invalid(f"the ask timeout is in seconds, from 10 to 86400 (a day), not {seconds}")
    return seconds


def _check_permissions(permissions: str) -> None:
    if permissions not in PERMISSION_POLICIES:
        raise Invalid(f"permissions must be one of {', '.join(PERMISSION_POLICIES)}, not {permissions!r}")


def _network(network: str, allow_hosts: list[str], sandbox: bool, name: str) -> list[str]:
    """The allowlist as stored (normalised `host:port` entries); refuses a policy the daemon could
    not apply: an allowlist is a network namespace of the sandbox, so it needs the sandbox."""
    if network not in allowhosts.MODES:
        raise Invalid(f"network must be one of {', '.join(allowhosts.MODES)}, not {network!r}")
    try:
        entries = allowhosts.parse_list(list(allow_hosts))
    except allowhosts.BadEntry as e:
        raise Invalid(str(e)) from None
    if network == "allowlist" and not sandbox:
        raise Invalid(f"agent {name}'s network allowlist needs the sandbox (the allowlist is the sandbox's own "
                      "network namespace): turn the sandbox on (--sandbox), or use --network open")
    if network == "open" and entries:
        raise Invalid("allowed hosts apply only with --network allowlist; with --network open the agent reaches "
                      "everything the machine can")
    return [str(e) for e in entries]


def create_agent(session: Session, workspace_id: str, *, owner_id: str | None, name: str, provider: str,
                 model: str | None = None, instructions: str = "", command: list[str] | None = None,
                 max_concurrent_tasks: int = 1, runtime: str | None = None, sandbox: bool = True,
                 network: str = "open", allow_hosts: list[str] | None = None, permissions: str = "allow",
                 mcp_servers: list[dict] | None = None, address: str | None = None,
                 ask_timeout_s: int | None = None) -> Agent:
    """The creator owns the agent: it runs only on their daemons, only they edit it (R-SEC-6). An
    agent made without the sandbox is audited (`agent.sandbox`), as turning it off later is."""
    _check(name, provider, command, max_concurrent_tasks)
    _check_permissions(permissions)
    hosts = _network(network, allow_hosts or [], bool(sandbox), name)
    _refuse_archived_name(session, workspace_id, name)
    agent = Agent(workspace_id=workspace_id, name=name, provider=provider, model=model, owner_id=owner_id,
                  instructions=instructions, command=command, max_concurrent_tasks=max_concurrent_tasks,
                  sandbox=bool(sandbox), network=network, allow_hosts=hosts, permissions=permissions,
                  ask_timeout_s=_ask_timeout(ask_timeout_s), mcp_servers=_mcp(mcp_servers, provider) or None, runtime_id=_runtime_for(session, workspace_id, provider, runtime, owner_id))
    session.add(agent)
    try:
        session.flush()
    except IntegrityError:
        raise _name_taken(session, workspace_id, name) from None
    if not agent.sandbox:
        audit.record(session, workspace_id=workspace_id, actor_id=owner_id, action="agent.sandbox",
                     target=f"agent {name}", detail={"created": True, **_confinement(agent)}, address=address)
    return agent


def _name_taken(session: Session, workspace_id: str, name: str) -> Conflict:
    return Conflict(f"an agent named {name!r} already exists in this workspace")


def _refuse_archived_name(session: Session, workspace_id: str, name: str, agent_id: str | None = None) -> None:
    """An archived agent keeps its name (its runs show it): say so rather than "already exists"."""
    other = session.scalar(select(Agent).where(Agent.workspace_id == workspace_id, Agent.name == name))
    if other is not None and other.id != agent_id and other.archived_at is not None:
        raise Conflict(f"an archived agent is named {name!r}: restore it (`predictorx agent restore {name}`, or "
                       "Restore on the Agents page) or choose another name")


_BY_ID_OR_NAME = (select(Agent).where(Agent.workspace_id == bindparam("ws"),
                                      or_(Agent.id == bindparam("ref"), Agent.name == bindparam("ref")))
                  .order_by((Agent.id == bindparam("ref")).desc()).limit(2))


def find_agent(session: Session, workspace_id: str, ref: str) -> Agent:
    """The workspace's agent whose id is `ref`, else the one named `ref`. One statement for both
    (by name, as an issue's assignee usually is, was a miss by id first): names are unique in a
    workspace, so at most two rows, the one with that id first."""
    agent = session.scalars(_BY_ID_OR_NAME, {"ws": workspace_id, "ref": ref}).first()
    if agent is None:
        raise NotFound(f"agent {ref!r} not found; `predictorx agent list` shows the agents")
    return agent


def list_agents(session: Session, workspace_id: str, *, archived: bool = False) -> list[Agent]:
    """The workspace's agents to assign work to; `archived=True`: the archived ones instead."""
    q = select(Agent).where(Agent.workspace_id == workspace_id,
                            Agent.archived_at.is_not(None) if archived else Agent.archived_at.is_(None))
    return list(session.scalars(q.order_by(Agent.name)))


_UNSET = object()
#: The CLIs whose runs take an agent's own MCP servers (daemon/workflowhooks.py MCP_HARNESSES).
MCP_PROVIDERS = ("claude", "codex", "acp")


def update_agent(session: Session, agent: Agent, *, actor_id: str | None, name: str | None = None,
                 provider: str | None = None, model: str | None | object = _UNSET, instructions: str | None = None,
                 command: list[str] | None | object = _UNSET, max_concurrent_tasks: int | None = None,
                 runtime: str | None | object = _UNSET, sandbox: bool | None = None, network: str | None = None,
                 allow_hosts: list[str] | None = None, permissions: str | None = None,
                 mcp_servers: list[dict] | None | object = _UNSET, address: str | None = None,
                 ask_timeout_s: int | None = None) -> Agent:
    """Change what is given; runs already queued or going keep what they were claimed with.
    Only the agent's owner — the person whose machines run it — may (R-SEC-6). A change of its
    confinement (sandbox, network, allowed hosts, permissions) is audited."""
    _require_owner(agent, actor_id)
    confinement = _confinement(agent)
    new_name = name if name is not None else agent.name
    new_provider = provider if provider is not None else agent.provider
    new_command = agent.command if command is _UNSET else command
    if new_provider not in ("command", "acp") and command is _UNSET:
        new_command = None if provider is not None else agent.command
    new_limit = max_concurrent_tasks if max_concurrent_tasks is not None else agent.max_concurrent_tasks
    _check(new_name, new_provider, new_command, new_limit)
    new_network = network if network is not None else agent.network or "open"
    if allow_hosts is None:  # leaving --network open drops the list; an unchanged mode keeps it
        allow_hosts = [] if new_network == "open" else list(agent.allow_hosts or [])
    hosts = _network(new_network, allow_hosts, agent.sandbox if sandbox is None else sandbox, new_name)
    if new_name != agent.name:
        _refuse_archived_name(session, agent.workspace_id, new_name, agent.id)
    if runtime is not _UNSET or new_provider != agent.provider:
        agent.runtime_id = _runtime_for(session, agent.workspace_id, new_provider,
                                        None if runtime is _UNSET else runtime, actor_id)
    agent.name, agent.provider, agent.command, agent.max_concurrent_tasks = new_name, new_provider, new_command, new_limit
    if model is not _UNSET:
        agent.model = model or None
    if instructions is not None:
        agent.instructions = instructions
    if permissions is not None:
        _check_permissions(permissions)
        agent.permissions = permissions
    if ask_timeout_s is not None:  # 0: back to the daemon's default
        agent.ask_timeout_s = _ask_timeout(ask_timeout_s) if ask_timeout_s else None
    if sandbox is not None:
        agent.sandbox = sandbox
    agent.mcp_servers = _mcp(agent.mcp_servers if mcp_servers is _UNSET else mcp_servers, new_provider) or None
    agent.network, agent.allow_hosts = new_network, hosts
    try:
        session.flush()
    except IntegrityError:
        raise _name_taken(session, agent.workspace_id, new_name) from None
    if _confinement(agent) != confinement:
        changed = {k: {"from": v, "to": _confinement(agent)[k]} for k, v in confinement.items()
                   if _confinement(agent)[k] != v}
        audit.record(session, workspace_id=agent.workspace_id, actor_id=actor_id, action="agent.sandbox",
                     target=f"agent {agent.name}", detail=changed, address=address)
    return agent


def _mcp(servers: object, provider: str) -> list[dict]:
    try:
        checked = mcpconfig.normalize(servers)
    except mcpconfig.McpConfigError as e:
        raise Invalid(str(e)) from None
    if checked and provider not in MCP_PROVIDERS:
        hint = (f"; run {provider} as an ACP agent instead (`--provider acp --acp-profile {provider}`), whose "
                "sessions take them" if provider in ("gemini", "opencode") else "")
        raise Invalid(f"MCP servers of its own are added to {', '.join(MCP_PROVIDERS)} agents' runs, not "
                      f"{provider}'s{hint}")
    return checked


def _confinement(agent: Agent) -> dict[str, object]:
    return {"sandbox": bool(agent.sandbox), "network": agent.network or "open",
            "allow_hosts": list(agent.allow_hosts or []), "permissions": agent.permissions or "allow"}


def _may_remove(agent: Agent, actor_id: str | None, actor_role: str | None, what: str) -> None:
    if actor_role not in ("owner", "admin") and (agent.owner_id is None or agent.owner_id != actor_id):
        raise Forbidden(f"agent {agent.name} is another member's: only its owner or a workspace admin {what} it")


def _unassign_issues(session: Session, agent: Agent) -> None:
    session.execute(update(Issue).where(Issue.assignee_type == "agent", Issue.assignee_id == agent.id)
                    .values(assignee_type=None, assignee_id=None).execution_options(synchronize_session=False))


def _refuse_while_active(session: Session, agent: Agent, what: str) -> None:
    active = session.scalar(select(Task.id).where(Task.agent_id == agent.id, Task.status.in_(ACTIVE_STATUSES)).limit(1))
    if active is not None:
        raise Conflict(f"{agent.name} has runs queued or going; cancel them first, then {what} it")


def delete_agent(session: Session, agent: Agent, *, actor_id: str | None, actor_role: str | None) -> None:
    """Only an agent that never ran: deleting one with runs would delete their history (messages,
    branches, reviews) with it, so that is refused with a sentence offering the archive instead.
    Its owner may delete it, and so may an owner or admin of the workspace."""
    _may_remove(agent, actor_id, actor_role, "deletes")
    runs = session.scalar(select(func.count()).select_from(Task).where(Task.agent_id == agent.id)) or 0
    if runs:
        raise Conflict(f"{agent.name} has {runs} run{'s' if runs != 1 else ''}: deleting it would delete "
                       f"{'their' if runs != 1 else 'its'} history. Archive it instead (`predictorx agent archive "
                       f"{agent.name}`, or Archive on the Agents page): it leaves the lists and cannot be given "
                       "work, and its runs keep their messages and its name")
    _unassign_issues(session, agent)
    session.delete(agent)
    session.flush()


def archive_agent(session: Session, agent: Agent, *, actor_id: str | None, actor_role: str | None) -> Agent:
    """Out of lists and assignment, its runs kept (and shown with its name); issues assigned to it
    become unassigned. Refused while it has runs queued or going. Who may delete it may archive it."""
    _may_remove(agent, actor_id, actor_role, "archives")
    if agent.archived_at is None:
        _refuse_while_active(session, agent, "archive")
        _unassign_issues(session, agent)
        agent.archived_at = utcnow()
        session.flush()
    return agent


def restore_agent(session: Session, agent: Agent, *, actor_id: str | None, actor_role: str | None) -> Agent:
    _may_remove(agent, actor_id, actor_role, "restores")
    agent.archived_at = None
    session.flush()
    return agent


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


def run_counts(session: Session, workspace_id: str) -> dict[str, int]:
    """agent id → how many runs it has had (an agent with none may be deleted; others archived)."""
    return dict(session.execute(select(Task.agent_id, func.count()).where(Task.workspace_id == workspace_id)
                                .group_by(Task.agent_id)).all())
