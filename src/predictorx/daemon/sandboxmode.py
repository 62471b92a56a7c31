"""Which runs of a daemon are sandboxed, and what the daemon says about it at start (issue 29).

A daemon's choice is one of three: `daemon start` (None: every agent sandboxed unless its owner
turned the sandbox off for it — the default), `--sandbox` (True: every agent, whatever it says)
and `--no-sandbox` (False: no agent; said at start with what the agents can then reach). Where
bubblewrap is missing, the default daemon still starts and says how to install it, and the runs
of sandboxed agents fail saying so; nothing runs unconfined unless someone asked for it.
"""

from __future__ import annotations


from .. import unconfined
from .sandbox import bwrap_problem

INSTALL = "install it with `apt-get install bubblewrap` (the Debian/Ubuntu package; `dnf install bubblewrap` on Fedora)"


def run_is_sandboxed(daemon_choice: bool | None, agent_sandbox: bool) -> bool:
    """The daemon's choice if it made one (`--sandbox`, `--no-sandbox`), else the agent's."""
    return agent_sandbox if daemon_choice is None else daemon_choice


def at_start(daemon_choice: bool | None) -> tuple[list[str], str | None]:
    """(the lines a starting daemon says about its sandbox, or the one sentence it refuses with)."""
    if daemon_choice is False:
        return [unconfined.daemon_warning()], None
    problem = bwrap_problem()
    if problem and daemon_choice:
        return [], f"--sandbox was asked for but {problem}; {INSTALL}, or start without --sandbox"
    if problem:
        return [f"sandbox: unavailable — {problem}; {INSTALL}. Until then the runs of sandboxed agents (every agent "
                "unless its owner turned the sandbox off) fail saying so; `--no-sandbox` runs every agent unconfined."], None
    if daemon_choice:
        return ["sandbox: on for every agent of this daemon (bubblewrap)."], None
    return ["sandbox: on (bubblewrap) for every agent but those whose owner turned it off (`agent update "
            "<name> --no-sandbox`)."], None


def refusal(agent_name: str, daemon_name: str, daemon_choice: bool | None, problem: str) -> str:
    """Why a sandboxed run cannot start on this daemon, and the three ways out."""
    who = "this daemon runs every agent sandboxed" if daemon_choice else \
        f"agent {agent_name} asks for the sandbox (the default)"
    return (f"{who}, but on daemon {daemon_name} {problem}; install the package `bubblewrap` there "
            f"(`apt-get install bubblewrap`), turn the sandbox off for this agent (`predictorx agent update "
            f"{agent_name} --no-sandbox`), or start that daemon with --no-sandbox")
