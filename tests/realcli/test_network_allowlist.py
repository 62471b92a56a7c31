"""Each real CLI, sandboxed, under a network allowlist naming only its model server (issue 29).

The run has a network namespace of its own: its model server on 127.0.0.1 is reached through the
daemon's proxy (the relay listens on the same port inside), the Predictor X server likewise, and
nothing else. The daemon's environment still names the tripwire as HTTP(S) proxy: inside, the
relay's proxy replaces it, so anything a CLI tries beyond its model server reaches the daemon's
proxy, is refused and shows in the run's messages — never the tripwire, never a hang.
"""

from __future__ import annotations

import json

import pytest

from .scenario import git

PROVIDERS = ["claude", "codex", "gemini", "opencode"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_real_cli_completes_under_an_allowlist_of_only_its_model_server(scenario, provider):  # noqa: ANN001
    s = scenario(provider)
    model = s.model.url.removeprefix("http://")
    agent = s.server.api("PATCH", f"/api/agents/{s.agent_name}",
                         {"sandbox": True, "network": "allowlist", "allow_hosts": [model]})
    assert agent["network"] == "allowlist" and agent["allow_hosts"] == [model]
    repo = s.person_repo()
    _issue, run = s.assign(s.project(repo, "worktree"))
    task = s.wait(run["id"], timeout=180)
    assert f"edited by {provider} in " in git(repo, "show", f"{task['branch_name']}:README.md")
    assert s.model.conversation(), "the model server was reached through the proxy"
    assert s.tripwire.requests == [], s.tripwire.requests  # the daemon's own proxy setting is not used inside
    refused = [m["content"]["message"] for m in s.messages(task["id"]) if m["content"].get("event") == "network_refused"]
    # Whatever a CLI tried beyond its model server was refused with a line saying so (Codex asks
    # github.com and chatgpt.com; the others ask nothing); the model server never was.
    assert not any(model in line for line in refused), refused
    if provider == "codex":
        assert refused and all("not on agent codex-1's allowlist" in line for line in refused), json.dumps(refused)
