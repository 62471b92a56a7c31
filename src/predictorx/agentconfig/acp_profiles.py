"""Launch profiles for ACP agents: what starts an agent's ACP server and what it needs around it.

A profile is data, not code: the command and arguments, environment set unless the daemon's own
says otherwise, how a model is chosen, and whose config dir and instruction file are the agent's.
An ACP agent is stored with its whole command line (`predictorx agent create --provider acp --acp-command "…"`, or
`--acp-profile NAME`, which stores the profile's); the adapter finds the profile again by the
command's executable name, so a workspace's own ACP agent needs no profile at all (it then gets
the defaults: no extra environment, no config dir copied into its sandbox, `AGENTS.md`, the model
only through the agent's own config).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class AcpProfile:
    name: str
    #: The executable's name on PATH (also how a stored command is matched to its profile).
    executable: str
    #: Arguments that make it speak ACP on stdio.
    args: tuple[str, ...] = ()
    #: Set for each run unless the daemon's environment already has them.
    env: dict[str, str] = field(default_factory=dict)
    #: The flag the model goes after (`--model M`); empty: the agent's model is not set by us.
    model_flag: str = ""
    #: The native provider whose config dir the sandbox copies for it and whose instruction file
    #: carries the Project Context (daemon/cliconfig.py, daemon/context/): the same CLI's.
    config_of: str = "acp"
    #: What it needs in its config dir / environment to reach a model (docs/agents.md says more).
    needs: str = ""

    def command(self) -> list[str]:
        return [self.executable, *self.args]


PROFILES: dict[str, AcpProfile] = {p.name: p for p in (
    AcpProfile(
        "gemini", "gemini", ("--experimental-acp",),
        # A task's workdir is new to Gemini; an untrusted folder would refuse to edit.
        env={"GEMINI_CLI_TRUST_WORKSPACE": "true"}, model_flag="--model", config_of="gemini",
        needs="GEMINI_API_KEY (and GOOGLE_GEMINI_BASE_URL for another endpoint); ~/.gemini/settings.json "
              "with security.auth.selectedType"),
    AcpProfile(
        "opencode", "opencode", ("acp",),
        env={"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
             "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"}, config_of="opencode",
        needs="~/.config/opencode/opencode.json with its provider and model"),
    AcpProfile(
        "claude-code-acp", "claude-code-acp", config_of="claude",
        needs="ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint); the `claude` CLI's config; "
              "CLAUDE_CODE_EXECUTABLE naming the person's `claude` (its SDK's own copy failed in the sandbox)"),
    AcpProfile(
        # Codex's own sandbox helper is not there (and ours is around it), and a run has no one to
        # approve: as the native adapter's --dangerously-bypass-approvals-and-sandbox. Not through
        # session/set_mode, which writes the person's (read-only) config.toml.
        "codex-acp", "codex-acp", ("-c", 'sandbox_mode="danger-full-access"', "-c", 'approval_policy="never"'),
        config_of="codex",
        needs="OPENAI_API_KEY or ~/.codex/config.toml with its model provider"),
    AcpProfile(
        # Qwen Code speaks ACP itself; its approvals come to us as permission requests, which the
        # agent's policy answers (allow, deny or ask a person).
        "qwen", "qwen", ("--acp",), model_flag="--model", config_of="qwen",
        needs="OPENAI_API_KEY and OPENAI_BASE_URL (any OpenAI-compatible endpoint) with OPENAI_MODEL, and "
              "~/.qwen/settings.json with security.auth.selectedType \"openai\"; or its own sign-in"),
    AcpProfile(
        # Kilo is an OpenCode fork: OpenCode's off-the-network switches under its own names, and
        # its bundled plugins (codebase indexing, a chat plugin) that it would fetch from npm off.
        "kilo", "kilo", ("acp",),
        env={"KILO_DISABLE_DEFAULT_PLUGINS": "1", "KILO_DISABLE_AUTOUPDATE": "1", "KILO_DISABLE_MODELS_FETCH": "1",
             "KILO_DISABLE_LSP_DOWNLOAD": "1", "KILO_DISABLE_SHARE": "1", "KILO_DISABLE_CODEBASE_INDEXING": "1",
             "KILO_DISABLE_SESSION_INGEST": "1", "KILO_DISABLE_PRESENCE": "1",
             "KILO_TELEMETRY_LEVEL": "off"},
        config_of="kilo", needs="~/.config/kilo/kilo.json with its provider and model (OpenCode's format; "
                                "\"disabled_providers\": [\"kilo\"] keeps it off its own gateway); or its own sign-in"),
    AcpProfile(
        # Its tool approvals come to us as permission requests (the agent's policy answers them).
        "copilot", "copilot", ("--acp",), env={"COPILOT_AUTO_UPDATE": "false"}, model_flag="--model",
        config_of="copilot",
        needs="a GitHub sign-in with Copilot, or a model provider of one's own: COPILOT_PROVIDER_BASE_URL, "
              "COPILOT_MODEL (and COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_TYPE; COPILOT_OFFLINE=true "
              "keeps it off GitHub)"),
)}


# npm-packaged agents of issue 25's second round, in a module of their own (acp_profiles_npm.py).
from .acp_profiles_npm import NPM_PROFILES  # noqa: E402

PROFILES.update({fields["name"]: AcpProfile(**fields) for fields in NPM_PROFILES})

class UnknownProfile(LookupError):
    pass


def get(name: str) -> AcpProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UnknownProfile(f"unknown ACP profile {name!r}; shipped profiles: {', '.join(PROFILES)}") from None


def for_command(argv: list[str]) -> AcpProfile | None:
    """The profile of a stored command line, by its executable's name (`/opt/bin/gemini` → gemini);
    `node …/claude-code-acp/dist/index.js`-style commands match by any word naming a profile."""
    for word in argv[:3]:
        base = os.path.basename(word)
        for profile in PROFILES.values():
            if base in (profile.executable, f"{profile.executable}.js"):
                return profile
    return None


def check_command(argv: list[str] | None) -> str | None:
    """Why this cannot be an ACP agent's command (a sentence), or None if it can."""
    if not argv:
        return ("an acp agent needs the command that starts its ACP server: --acp-command 'gemini "
                f"--experimental-acp' or --acp-profile NAME ({', '.join(PROFILES)})")
    if any("\n" in word or "\0" in word for word in argv):
        return "the ACP command must be one line"
    return None


# The Python-packaged agents' profiles (gptme, Mistral Vibe) live beside these, as AcpProfile's fields.
from .acp_profiles_python import PYTHON_PROFILES  # noqa: E402 — beside the others, not above them

PROFILES.update({fields["name"]: AcpProfile(**fields) for fields in PYTHON_PROFILES})
