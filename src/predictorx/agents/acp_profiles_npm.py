"""Launch profiles of npm-packaged ACP agents added in issue 25's second round (acp_profiles.py
holds the first ones and what a profile is; this module's entries are merged into its PROFILES).

pi (`@mariozechner/pi-coding-agent`) speaks ACP through its community adapter `pi-acp`, which
runs `pi --mode rpc` in the session's folder and bridges the two: one profile, no adapter code.
"""

from __future__ import annotations

from .acp_profiles import AcpProfile

NPM_PROFILES: tuple[AcpProfile, ...] = (
    AcpProfile(
        # pi-acp starts `pi --mode rpc` (from PATH, or PI_ACP_PI_COMMAND); pi itself approves its
        # tools (no permission requests reach us). PI_OFFLINE keeps pi's start-up off the network
        # (update check, install telemetry); the model is pi's default from its settings.json, or
        # chosen per session through the session's `model` config option.
        "pi", "pi-acp", env={"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}, config_of="pi",
        needs="~/.pi/agent/models.json with a provider (its baseUrl, api \"openai-completions\" or another, "
              "apiKey, models) and ~/.pi/agent/settings.json naming defaultProvider and defaultModel; or "
              "a built-in provider's API key in the environment"),
)
