"""Whether an agent can run now, and if not, why in words a person can act on (issue 26 §2).

An agent runs only on its owner's daemons, and only on one that has a runtime of the agent's
provider (the daemon reports the CLIs it found on its PATH). The new-agent form offers only
providers some daemon of the owner's has; the agents list marks an agent none of whose daemons
is online; a queued task that no daemon can claim says so on its pages and in the API — computed
when it is read, so a daemon that went away after the task was queued is named too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Daemon, Runtime, Task, User, utcnow
from .agents import PROVIDERS
from .liveness import is_online

#: How a person gets each provider's CLI onto a daemon's machine. The server keeps these words
#: itself: it does not import the agent adapters (issue 23 §3), which live on the daemon's side.
INSTALL_HINTS = {
    "claude": "install Claude Code (`npm install -g @anthropic-ai/claude-code`)",
    "codex": "install Codex (`npm install -g @openai/codex`)",
    "gemini": "install Gemini CLI (`npm install -g @google/gemini-cli`)",
    "opencode": "install OpenCode (`npm install -g opencode-ai`)",
}


@dataclass(frozen=True)
class ProviderState:
    """One provider as seen from one person's daemons."""
    provider: str
    online: tuple[str, ...]  # names of the person's online daemons that have it
    offline: tuple[tuple[str, datetime | None], ...]  # (name, last seen) of the others that have it

    @property
    def runnable(self) -> bool:
        return bool(self.online)

    @property
    def installed(self) -> bool:
        """Some daemon of the person's has the CLI, online or not."""
        return bool(self.online or self.offline)

    def reason(self) -> str | None:
        """Why an agent of this provider cannot run now, or None when it can."""
        if self.online:
            return None
        if self.offline:
            names = ", ".join(name for name, _ in self.offline)
            return f"its daemon ({names}) is offline; start it with `predictorx daemon start`"
        hint = INSTALL_HINTS.get(self.provider, f"put the {self.provider} CLI on the PATH")
        return f"no daemon of yours has it: {hint} on your machine, then (re)start `predictorx daemon start`"


def _owners_runtimes(session: Session, workspace_id: str, owner_id: str | None) -> list[tuple[Runtime, Daemon]]:
    q = select(Runtime, Daemon).join(Daemon, Daemon.id == Runtime.daemon_id).where(
        Daemon.workspace_id == workspace_id, Daemon.owner_id == owner_id).order_by(Daemon.name)
    return [(rt, d) for rt, d in session.execute(q).all()]


def provider_states(session: Session, workspace_id: str, owner_id: str | None) -> list[ProviderState]:
    """Every provider, with which of `owner_id`'s daemons can run it now and which are away."""
    found = _owners_runtimes(session, workspace_id, owner_id)
    states = []
    for provider in PROVIDERS:
        mine = [d for rt, d in found if rt.provider == provider]
        states.append(ProviderState(provider, tuple(d.name for d in mine if is_online(d)),
                                    tuple((d.name, d.last_heartbeat_at) for d in mine if not is_online(d))))
    return states


def _ago(when: datetime | None, now: datetime) -> str:
    if when is None:
        return "never seen"
    seconds = max(0, int((now - when).total_seconds()))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"last seen {seconds // size} {unit} ago"
    return f"last seen {seconds} s ago"


def owners_runtimes(session: Session, agent: Agent) -> list[tuple[Runtime, Daemon]]:
    """The runtimes of `agent`'s owner's daemons, with their daemons: what agent_blocker reads."""
    return _owners_runtimes(session, agent.workspace_id, agent.owner_id)


def agent_blocker(session: Session, agent: Agent, pairs: list[tuple[Runtime, Daemon]] | None = None) -> str | None:
    """Why no daemon can take `agent`'s work now (None when one can): names the owner, the
    provider and, where the owner has such daemons, when each was last seen. `pairs`: the
    owner's runtimes (owners_runtimes), where the caller read them already."""
    if pairs is None:
        pairs = owners_runtimes(session, agent)
    mine = [(rt, d) for rt, d in pairs if rt.provider == agent.provider
            and (agent.runtime_id is None or rt.id == agent.runtime_id)]
    if any(is_online(d) for _, d in mine):
        return None
    owner = session.get(User, agent.owner_id) if agent.owner_id else None
    whose = f"{owner.name}'s" if owner else "its owner's"
    now = utcnow()
    if mine:
        seen = "; ".join(f"{d.name} {_ago(d.last_heartbeat_at, now)}" for _, d in mine)
        which = "its chosen daemon" if agent.runtime_id else f"a daemon with {agent.provider}"
        return (f"no online daemon of {whose} has {agent.provider} ({seen}); the task starts when "
                f"{which} reconnects (`predictorx daemon start`)")
    hint = INSTALL_HINTS.get(agent.provider, f"put the {agent.provider} CLI on the PATH")
    return (f"no daemon of {whose} has {agent.provider}: its owner must {hint} and run "
            "`predictorx daemon start`; an agent runs only on its owner's machines")


def queued_reason(session: Session, task: Task, agent: Agent | None) -> str | None:
    """What a queued task waits for, as its pages and the API say it: a reason the server or a
    daemon stored (a budget, the queue after a lost daemon), else — computed now — that no daemon
    can claim it."""
    if task.status != "queued":
        return task.wait_reason
    blocker = agent_blocker(session, agent) if agent is not None else None
    if blocker is None:
        return task.wait_reason
    return f"{task.wait_reason}; {blocker}" if task.wait_reason and not _is_blocker_text(task.wait_reason) \
        else blocker


def _is_blocker_text(text: str) -> bool:
    """A reason stored at enqueue by this same rule (tasks.enqueue), superseded by a fresh one."""
    return text.startswith(("no online daemon", "no daemon of"))
