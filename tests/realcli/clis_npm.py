"""npm-packaged agent CLIs of issue 25's second round, set up as a person would against the test's
model server (merged into clis.py's tables): pi through its ACP adapter pi-acp, and Cline."""

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


def _cline(home: Path, server: ModelServer) -> dict[str, str]:
    # What `cline auth -p openai -k KEY -m MODEL -b URL` leaves: its OpenAI-compatible provider with
    # the endpoint. Over ACP Cline takes the provider and key from the environment (without a key
    # it asks for a Cline sign-in) and the endpoint only from this file.
    settings = home / ".cline" / "data" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "providers.json").write_text(json.dumps({
        "version": 1, "lastUsedProvider": "openai-compatible", "modes": {},
        "providers": {"openai-compatible": {"settings": {
            "provider": "openai-compatible", "apiKey": "sk-fixture", "model": ChatCompletionsServer.model,
            "baseUrl": f"{server.url}/v1"}, "updatedAt": "2026-12-05T21:00:00.000Z", "tokenSource": "manual"}}}))
    # Its telemetry (PostHog at data.cline.bot, OpenTelemetry at otel.cline.bot) is on unless the
    # person opts out here (`telemetryOptOut`, as its settings command writes it).
    (settings / "global-settings.json").write_text(json.dumps({"telemetryOptOut": True, "autoUpdateEnabled": False}))
    return {"CLINE_PROVIDER": "openai-compatible", "CLINE_API_KEY": "sk-fixture"}


PI = RealCli("pi", "pi-acp", ChatCompletionsServer, f"fixture/{ChatCompletionsServer.model}", "AGENTS.md")

CLINE = RealCli("cline", "cline", ChatCompletionsServer, ChatCompletionsServer.model, "AGENTS.md")

NPM_CONFIGURE = {"pi": _pi, "cline": _cline}
NPM_ACP_ONLY = {c.provider: c for c in (PI, CLINE)}
