"""What an agent can reach without the sandbox, in one sentence said everywhere it is turned off.

The CLI (`agent create|update --no-sandbox`, `daemon start --no-sandbox`, `up --no-sandbox`), the
agent's web form and a run's first message all say the same (issue 29 finding
11): an unsandboxed agent is the daemon's OS user, and nothing Predictor X does can keep that
user's files from it — the daemon's own config.json with its token included.
"""

from __future__ import annotations

REACH = ("without the sandbox the agent runs as the daemon's user and can read and change everything that "
         "user can: the person's files and repositories, ~/.ssh and other credentials, the agent CLIs' logins, "
         "and the daemon's own state dir (config.json with its token)")


def agent_warning(name: str) -> str:
    return f"warning: agent {name} is not sandboxed — {REACH}."


def daemon_warning() -> str:
    return f"warning: --no-sandbox runs every agent of this daemon unconfined — {REACH}."
