"""The Python-packaged real CLIs (gptme, Mistral Vibe, fast-agent): where the pinned ones are and how a person
points each at a model server on 127.0.0.1 (docs/agents.md). `make test` installs them from
tests/realcli/pyagents/ (exact versions, a venv each) into `.venv-agents/`; clis.py adds them to
its tables, so the scenario and conftest's `require` treat them like the npm ones."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .clis import DEAD_PROXY, RealCli
from .modelserver import ChatCompletionsServer, ModelServer
from .modelserver.markdown_chat import MarkdownToolChatServer

#: Where tests/realcli/pyagents/install.py links each agent's commands.
PYBIN = Path(__file__).resolve().parents[2] / ".venv-agents" / "bin"


@dataclass(frozen=True)
class PyRealCli(RealCli):
    def path(self) -> Path | None:
        exe = PYBIN / self.executable
        return exe if exe.exists() else None

    def environment(self, home: Path, server: ModelServer, proxy: str = DEAD_PROXY) -> dict[str, str]:
        env = super().environment(home, server, proxy)
        env["PATH"] = f"{PYBIN}{os.pathsep}{env['PATH']}"
        return env


def _gptme(home: Path, server: ModelServer) -> dict[str, str]:
    # gptme's `local` provider is any OpenAI-compatible endpoint: OPENAI_BASE_URL, the model as
    # local/<name> in MODEL (its docs). A config.toml of the person's own, telemetry not set (off).
    config = home / ".config" / "gptme"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[prompt]\nabout_user = "A test of Predictor X."\n\n[env]\n')
    return {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "sk-fixture",
            "MODEL": f"local/{MarkdownToolChatServer.model}"}


def _vibe(home: Path, server: ModelServer) -> dict[str, str]:
    # Mistral Vibe with a provider of one's own (backend "generic": any OpenAI-compatible endpoint),
    # telemetry, update checks and connectors off; the person trusts the folders tasks run in (its
    # trust prompt, answered once), without which it does not read their AGENTS.md.
    vibe = home / ".vibe"
    vibe.mkdir(parents=True, exist_ok=True)
    (vibe / "config.toml").write_text(
        'active_model = "scripted"\n'
        "enable_telemetry = false\nenable_update_checks = false\nenable_auto_update = false\n"
        "enable_notifications = false\nenable_connectors = false\n\n"
        '[[providers]]\nname = "fixture"\n'
        f'api_base = "{server.url}/v1"\n'
        'api_key_env_var = "FIXTURE_API_KEY"\nbackend = "generic"\n\n'
        f'[[models]]\nname = "{ChatCompletionsServer.model}"\nprovider = "fixture"\nalias = "scripted"\n')
    (vibe / "trusted_folders.toml").write_text(f'trusted = ["{home.parent}"]\nuntrusted = []\n')
    return {"FIXTURE_API_KEY": "sk-fixture"}


def _fast_agent(home: Path, server: ModelServer) -> dict[str, str]:
    # fast-agent's `generic` provider is any OpenAI-compatible endpoint (GENERIC_BASE_URL and
    # GENERIC_API_KEY, its docs); the agent's model is generic.<model>. No config file: its
    # telemetry (OpenTelemetry) is off unless configured.
    return {"GENERIC_BASE_URL": f"{server.url}/v1", "GENERIC_API_KEY": "sk-fixture"}


CONFIGURE = {"gptme": _gptme, "vibe": _vibe, "fast-agent": _fast_agent}
GPTME = PyRealCli("gptme", "gptme-acp", MarkdownToolChatServer, None, "AGENTS.md")
VIBE = PyRealCli("vibe", "vibe-acp", ChatCompletionsServer, None, "AGENTS.md")
FAST_AGENT = PyRealCli("fast-agent", "fast-agent-acp", ChatCompletionsServer, f"generic.{ChatCompletionsServer.model}",
                       "AGENTS.md")
PY_ACP = {c.provider: c for c in (GPTME, VIBE, FAST_AGENT)}
