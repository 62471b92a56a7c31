"""An agent's MCP servers over the API (issue 28 §3): set by its owner only, checked, refused for
a CLI whose runs cannot take them, and carried in its runs' claims (names of secrets, no values)."""

from __future__ import annotations

import uuid

SERVER = {"name": "docs", "url": "https://docs.example/mcp", "bearer_env": "DOCS_TOKEN"}


def test_owner_sets_checked_servers_and_the_claim_carries_them(api):
    did = str(uuid.uuid4())
    daemon = api.as_(api.post("/api/daemon/register", json={"daemon_id": did, "name": "box", "runtimes": [
        {"provider": "claude"}, {"provider": "gemini"}]}).json()["token"])
    assert api.post("/api/agents", json={"name": "cc", "provider": "claude", "runtime": did}).status_code == 201
    r = api.patch("/api/agents/cc", json={"mcp_servers": [SERVER]})
    assert r.status_code == 200, r.text
    assert r.json()["mcp_servers"] == [{**SERVER, "headers": {}, "env_headers": {}}]
    bad = api.patch("/api/agents/cc", json={"mcp_servers": [{"name": "agents-room", "command": "x"}]})
    assert bad.status_code == 422 and "agents-room" in bad.text
    assert api.patch("/api/agents/cc", json={"provider": "gemini"}).status_code == 422  # its servers would be lost
    refused = api.post("/api/agents", json={"name": "gem", "provider": "gemini", "mcp_servers": [SERVER]})
    assert refused.status_code == 422 and "--provider acp --acp-profile gemini" in refused.text  # what works
    assert api.patch("/api/agents/cc", json={"instructions": "x"}).json()["mcp_servers"]  # kept when not sent

    ws = api.get("/api/workspaces").json()[0]["id"]
    bob = api.as_(api.post(f"/api/workspaces/{ws}/members", json={"name": "bob"}).json()["token"])
    assert bob.patch("/api/agents/cc", json={"mcp_servers": []}).status_code == 403

    api.post("/api/issues", json={"title": "t", "assignee": "cc"})
    [claimed] = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    assert claimed["agent"]["mcp_servers"][0]["bearer_env"] == "DOCS_TOKEN"
    assert api.patch("/api/agents/cc", json={"mcp_servers": []}).json()["mcp_servers"] == []
