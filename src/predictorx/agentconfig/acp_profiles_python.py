"""Launch profiles of the Python-packaged ACP agents (PyPI): gptme, Mistral Vibe and fast-agent.

Data like the others (acp_profiles.py, which adds these to its PROFILES); what each needs to reach a
model is in docs/agents.md. Each is installed into a venv of its own (pipx, `uv tool`, or the
tests' tests/realcli/pyagents/), so the sandbox mounts the venv and its base interpreter
(daemon/sandbox.py `python_env`).
"""

from __future__ import annotations

from typing import Any

#: AcpProfile's fields, one dict per agent (acp_profiles.py makes them AcpProfiles: this module
#: imports nothing of it, so the two make no import cycle).
PYTHON_PROFILES: tuple[dict[str, Any], ...] = (
    dict(
        # gptme 0.35.1 runs its tools itself over ACP (no permission request, no tool_call update:
        # docs/agents.md); its model is `MODEL` (or its config.toml), no flag. Its session/new in a
        # folder it has worked in continues that folder's conversation (the id is the folder's).
        name="gptme", executable="gptme-acp", config_of="gptme",
        # Its token counts use tiktoken, which fetches its encoding from the internet
        # (openaipublic.blob.core.windows.net) on every count until cached: off, gptme then counts
        # ~4 characters a token. A daemon environment that sets it (e.g. 5, gptme's default) wins.
        env={"GPTME_TIKTOKEN_TIMEOUT": "0"},
        needs="MODEL (e.g. local/<model> with OPENAI_BASE_URL for any OpenAI-compatible endpoint, "
              "or anthropic/…, openai/… with their API keys), or ~/.config/gptme/config.toml"),
    dict(
        # Mistral Vibe asks the client before each tool that is not auto-approved (its default
        # mode auto-approves file edits only); its model is `active_model` in ~/.vibe/config.toml.
        name="vibe", executable="vibe-acp", config_of="vibe",
        needs="~/.vibe/config.toml (or $VIBE_HOME): a [[providers]] entry with api_base and "
              "api_key_env_var (backend \"generic\" for any OpenAI-compatible endpoint), a [[models]] "
              "entry and active_model; the task folders in trusted_folders.toml (else no AGENTS.md); "
              "or MISTRAL_API_KEY"),
    dict(
        # fast-agent: `--shell` gives its agent the local shell (its `bash` tool), which it runs
        # without asking. Its home (sessions, kept permission answers) is `.fast-agent/` in the
        # folder it starts in, the task's: its shell runs in the home's parent whatever the
        # session's cwd, so FAST_AGENT_HOME elsewhere would move the shell out of the task's folder.
        name="fast-agent", executable="fast-agent-acp", args=("--shell",), model_flag="--model",
        needs="a model as PROVIDER.MODEL (`--model`, e.g. generic.<model> with GENERIC_BASE_URL and "
              "GENERIC_API_KEY for any OpenAI-compatible endpoint, or anthropic.…, openai.… with their "
              "keys), or fastagent.config.yaml / fastagent.secrets.yaml in the task's folder"),
)
