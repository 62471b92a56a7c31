"""npm-packaged agent CLIs of issue 25's second round, set up as a person would against the test's
model server (merged into clis.py's tables): pi through its ACP adapter pi-acp."""

from __future__ import annotations

import json
from pathlib import Path

from .clis import RealCli
from .modelserver import ChatCompletionsServer, ModelServer


def _pi(home: Path, server: ModelServer) -> dict[str, str]:
    # pi's custom providers (its docs/models.md): an OpenAI-compatible chat-completions endpoint in
    # ~/.pi/agent/models.json, made the default in settings.json. `compat` keeps the system prompt a
    # `system` message (no `developer` role, no reasoning_effort), as for most local servers.
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"fixture": {
        "baseUrl": f"{server.url}/v1", "api": "openai-completions", "apiKey": "sk-fixture",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": ChatCompletionsServer.model, "name": "Scripted"}]}}}))
    (agent / "settings.json").write_text(json.dumps({
        "defaultProvider": "fixture", "defaultModel": ChatCompletionsServer.model,
        "quietStartup": True, "enableInstallTelemetry": False}))
    return {}


PI = RealCli("pi", "pi-acp", ChatCompletionsServer, f"fixture/{ChatCompletionsServer.model}", "AGENTS.md")

NPM_CONFIGURE = {"pi": _pi}
NPM_ACP_ONLY = {c.provider: c for c in (PI,)}
