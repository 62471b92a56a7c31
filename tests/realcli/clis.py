"""The real CLIs: where the pinned ones are, and how a person points each at a model server
on 127.0.0.1 with nothing reaching the internet (R-EX-9). Facts: docs/agents.md."""

from __future__ import annotations

import json
import os
import shutil
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .modelserver import AnthropicServer, ChatCompletionsServer, GeminiServer, ModelServer, ResponsesServer

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
#: Any request a CLI makes past loopback goes to a closed port and fails at once.
DEAD_PROXY = "http://127.0.0.1:9"


def probed_executables() -> set[str]:
    """The executables of the providers a daemon probes on its PATH (daemon/main.probe_runtimes)."""
    from predictorx import agents

    return {exe for p in agents.known_providers() if (exe := agents.get(p).executable)}


class Tripwire:
    """The HTTP(S) proxy and npm registry a CLI is given: it records every request that reaches it
    (a CONNECT to a host, a package fetch) and refuses it at once, so a test can assert that a
    run tried to reach nothing beyond its model server."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        wire = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _refuse(self) -> None:
                wire.requests.append(f"{self.command} {self.path}")
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

            do_CONNECT = do_GET = do_POST = do_HEAD = do_PUT = _refuse

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, name="tripwire", daemon=True).start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


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

    def bin_dir(self, where: Path) -> Path:
        """BIN without the other agent CLIs a daemon finds on PATH and asks `--version` when it
        starts (~0.5 CPU-s each for a node CLI, 2 CPU-s per daemon start for all four): this CLI's
        test needs only its own. Each link points at the real file, so the sandbox mounts what
        it mounted from BIN (the node_modules tree, daemon/sandbox.py `_package_root`)."""
        others = probed_executables() - {self.executable}
        folder = where / f"bin-{self.provider}"
        folder.mkdir(parents=True, exist_ok=True)
        for entry in BIN.iterdir():
            link = folder / entry.name
            if entry.name not in others and not link.exists():
                link.symlink_to(os.path.realpath(entry))
        return folder

    def environment(self, home: Path, server: ModelServer, proxy: str = DEAD_PROXY) -> dict[str, str]:
        """The daemon's environment (agents inherit it): a HOME of the test's own with the CLI's
        config pointing at `server`, telemetry and updates off, every other host unreachable
        (`proxy`: a closed port, or a Tripwire that records what was tried)."""
        home.mkdir(parents=True, exist_ok=True)
        env = {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local/state"),
            "PATH": f"{self.bin_dir(home.parent)}{os.pathsep}{os.environ.get('PATH', '')}",
            "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            "npm_config_registry": proxy + "/", "npm_config_offline": "true",
        }
        env.update(_CONFIGURE[self.provider](home, server))
        return env


def _claude(home: Path, server: ModelServer) -> dict[str, str]:
    # A person who has used Claude Code has its state file and settings; a sandboxed run gets them
    # read-only (daemon/cliconfig.py), which Claude Code must start with.
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 30}))
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3, "hasCompletedOnboarding": True}))
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
    # Nothing here keeps OpenCode off the network: the daemon does that itself for every run
    # (agents/opencode.py RUN_ENV), and test_end_to_end asserts no request reached the tripwire.
    return {}


def _qwen(home: Path, server: ModelServer) -> dict[str, str]:
    # Qwen Code (a Gemini CLI fork) reaches any OpenAI-compatible endpoint: auth type `openai` in
    # its settings, the endpoint and key in OPENAI_* (its own docs; docs/agents.md).
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "telemetry": {"enabled": False}, "privacy": {"usageStatisticsEnabled": False},
    }))
    return {"OPENAI_API_KEY": "sk-fixture", "OPENAI_BASE_URL": f"{server.url}/v1",
            "OPENAI_MODEL": ChatCompletionsServer.model}


def _kilo(home: Path, server: ModelServer) -> dict[str, str]:
    # Kilo is an OpenCode fork: the same provider config, in its own dir (~/.config/kilo). A
    # person who has run Kilo once has its one-time migration done (the `permission` key and the
    # marker file): it rewrites kilo.json on its first start, which the sandbox keeps read-only.
    config = home / ".config" / "kilo"
    config.mkdir(parents=True, exist_ok=True)
    (config / ".bash-permission-migrated").write_text("")
    (config / "kilo.json").write_text(json.dumps({
        "$schema": "https://app.kilo.ai/config.json", "autoupdate": False, "share": "disabled",
        "provider": {"fixture": {"npm": "@ai-sdk/openai-compatible", "name": "Fixture",
                                 "options": {"baseURL": f"{server.url}/v1", "apiKey": "sk-fixture"},
                                 "models": {ChatCompletionsServer.model: {"name": "Scripted"}}}},
        "model": f"fixture/{ChatCompletionsServer.model}", "permission": {"bash": "allow"},
        # Its own gateway is a provider it asks for models otherwise (api.kilo.ai).
        "disabled_providers": ["kilo"],
    }))
    return {}


def _copilot(home: Path, server: ModelServer) -> dict[str, str]:
    # GitHub Copilot CLI with a model provider of one's own (BYOK, its `copilot help environment`):
    # no GitHub sign-in; offline mode skips GitHub authentication, telemetry and updates.
    (home / ".copilot").mkdir(parents=True, exist_ok=True)
    return {"COPILOT_PROVIDER_BASE_URL": f"{server.url}/v1", "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": "sk-fixture", "COPILOT_MODEL": ChatCompletionsServer.model,
            "COPILOT_OFFLINE": "true"}


_CONFIGURE = {"claude": _claude, "codex": _codex, "gemini": _gemini, "opencode": _opencode, "qwen": _qwen,
              "kilo": _kilo, "copilot": _copilot}

CLAUDE = RealCli("claude", "claude", AnthropicServer, None, "CLAUDE.md")
CODEX = RealCli("codex", "codex", ResponsesServer, None, "AGENTS.md")
GEMINI = RealCli("gemini", "gemini", GeminiServer, GeminiServer.model, "GEMINI.md")
OPENCODE = RealCli("opencode", "opencode", ChatCompletionsServer, f"fixture/{ChatCompletionsServer.model}", "AGENTS.md")
QWEN = RealCli("qwen", "qwen", ChatCompletionsServer, ChatCompletionsServer.model, "QWEN.md")
#: The CLIs with a native adapter (agents/<provider>.py); every one runs through ACP too.
ALL = {c.provider: c for c in (CLAUDE, CODEX, GEMINI, OPENCODE)}
#: The CLIs that run here only as ACP agents (a launch profile, agentconfig/acp_profiles.py).
KILO = RealCli("kilo", "kilo", ChatCompletionsServer, f"fixture/{ChatCompletionsServer.model}", "AGENTS.md")
COPILOT = RealCli("copilot", "copilot", ChatCompletionsServer, ChatCompletionsServer.model, "AGENTS.md")
ACP_ONLY = {c.provider: c for c in (QWEN, KILO, COPILOT)}


def node_available() -> bool:
    return shutil.which("node") is not None


# npm-packaged agents of issue 25's second round (clis_npm.py).
from .clis_npm import NPM_ACP_ONLY, NPM_CONFIGURE  # noqa: E402  (it imports RealCli from here)

_CONFIGURE.update(NPM_CONFIGURE)
ACP_ONLY.update(NPM_ACP_ONLY)
# The Python-packaged CLIs (gptme, Mistral Vibe; ACP only here): tests/realcli/pyclis.py.
from .pyclis import CONFIGURE as _PY_CONFIGURE, PY_ACP  # noqa: E402 — it builds on RealCli above

_CONFIGURE.update(_PY_CONFIGURE)
ACP_ONLY.update(PY_ACP)
