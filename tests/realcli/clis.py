"""The four real CLIs: where the pinned ones are, and how a person points each at a model server
on 127.0.0.1 with nothing reaching the internet (R-EX-9). Facts: docs/agents.md."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .modelserver import AnthropicServer, ChatCompletionsServer, GeminiServer, ModelServer, ResponsesServer

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
#: Any request a CLI makes past loopback goes to a closed port and fails at once.
DEAD_PROXY = "http://127.0.0.1:9"


@dataclass(frozen=True)
class RealCli:
    provider: str
    executable: str
    server_class: type[ModelServer]
    #: The model the agent is created with (None: the CLI's configured default).
    model: str | None
    instruction_file: str

    def path(self) -> Path | None:
        exe = BIN / self.executable
        return exe if exe.exists() else None

    def environment(self, home: Path, server: ModelServer) -> dict[str, str]:
        """The daemon's environment (agents inherit it): a HOME of the test's own with the CLI's
        config pointing at `server`, telemetry and updates off, every other host unreachable."""
        home.mkdir(parents=True, exist_ok=True)
        env = {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local/state"),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "HTTPS_PROXY": DEAD_PROXY, "HTTP_PROXY": DEAD_PROXY, "https_proxy": DEAD_PROXY, "http_proxy": DEAD_PROXY,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            "npm_config_registry": DEAD_PROXY + "/", "npm_config_offline": "true",
        }
        env.update(_CONFIGURE[self.provider](home, server))
        return env


def _claude(home: Path, server: ModelServer) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-ant-fixture",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
            # Tests run as root: Claude Code refuses bypassPermissions as root unless told it is
            # sandboxed; the person opts in the same way (docs/agents.md).
            "IS_SANDBOX": "1"}


def _codex(home: Path, server: ModelServer) -> dict[str, str]:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.5"\n'
        'model_provider = "fixture"\n'
        "check_for_update_on_startup = false\n\n"
        "[model_providers.fixture]\n"
        'name = "fixture"\n'
        f'base_url = "{server.url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "FIXTURE_API_KEY"\n\n'
        "[analytics]\nenabled = false\n\n"
        '[otel]\nexporter = "none"\n')
    return {"CODEX_HOME": str(codex_home), "FIXTURE_API_KEY": "sk-fixture"}


def _gemini(home: Path, server: ModelServer) -> dict[str, str]:
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "telemetry": {"enabled": False}, "privacy": {"usageStatisticsEnabled": False},
    }))
    return {"GEMINI_API_KEY": "fixture-key", "GOOGLE_GEMINI_BASE_URL": server.url}


def _opencode(home: Path, server: ModelServer) -> dict[str, str]:
    config = home / ".config" / "opencode"
    config.mkdir(parents=True, exist_ok=True)
    (config / "opencode.json").write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
        "provider": {"fixture": {"npm": "@ai-sdk/openai-compatible", "name": "Fixture",
                                 "options": {"baseURL": f"{server.url}/v1", "apiKey": "sk-fixture"},
                                 "models": {ChatCompletionsServer.model: {"name": "Scripted"}}}},
    }))
    return {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_PURE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "1"}


_CONFIGURE = {"claude": _claude, "codex": _codex, "gemini": _gemini, "opencode": _opencode}

CLAUDE = RealCli("claude", "claude", AnthropicServer, None, "CLAUDE.md")
CODEX = RealCli("codex", "codex", ResponsesServer, None, "AGENTS.md")
GEMINI = RealCli("gemini", "gemini", GeminiServer, GeminiServer.model, "GEMINI.md")
OPENCODE = RealCli("opencode", "opencode", ChatCompletionsServer, f"fixture/{ChatCompletionsServer.model}", "AGENTS.md")
ALL = {c.provider: c for c in (CLAUDE, CODEX, GEMINI, OPENCODE)}


def node_available() -> bool:
    return shutil.which("node") is not None
