"""Launch profiles of npm-packaged ACP agents added in issue 25's second round (acp_profiles.py
holds the first ones and what a profile is; this module's entries are merged into its PROFILES).

pi (`@mariozechner/pi-coding-agent`) speaks ACP through its community adapter `pi-acp`, which
runs `pi --mode rpc` in the session's folder and bridges the two: one profile, no adapter code.
Cline (`cline`) speaks ACP itself (`cline --acp`).
"""

from __future__ import annotations

from typing import Any

#: AcpProfile's fields, by name (acp_profiles.py makes the profiles; no import back, no cycle).
NPM_PROFILES: tuple[dict[str, Any], ...] = (
    dict(
        # pi-acp starts `pi --mode rpc` (from PATH, or PI_ACP_PI_COMMAND); pi itself approves its
        # tools (no permission requests reach us). PI_OFFLINE keeps pi's start-up off the network
        # (update check, install telemetry); the model is pi's default from its settings.json, or
        # chosen per session through the session's `model` config option.
        name="pi", executable="pi-acp", env={"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}, config_of="pi",
        needs="~/.pi/agent/models.json with a provider (its baseUrl, api \"openai-completions\" or another, "
              "apiKey, models) and ~/.pi/agent/settings.json naming defaultProvider and defaultModel; or "
              "a built-in provider's API key in the environment"),
    dict(
        # Cline runs its sessions in a shared background "hub" process by default (started once,
        # detached, reused by any later Cline on the machine): `local` keeps each run's session in
        # the process we start, so it stays in the run's sandbox and ends with it. Its tool calls
        # come to us as permission requests (the agent's policy answers them).
        name="cline", executable="cline", args=("--acp",),
        env={"CLINE_SESSION_BACKEND_MODE": "local", "CLINE_NO_AUTO_UPDATE": "1"},
        config_of="cline",
        needs="CLINE_PROVIDER and CLINE_API_KEY in the environment (its ACP server refuses a session "
              "without a key or a Cline sign-in), and for another endpoint the provider's baseUrl in "
              "~/.cline/data/settings/providers.json (`cline auth -p openai -b URL -k KEY -m MODEL`)"),
)
