"""The server's claim answers are what `protocol.Claim` reads (issue 23 item 3): a claim and the
claims a finish hands on (`claim_next`) parse on the daemon's side, and the context a task keeps is
the one its daemon was sent."""

from __future__ import annotations

import uuid

from predictorx.protocol import Claim


def test_the_claims_the_server_answers_are_read_by_the_protocol(api):
    did = str(uuid.uuid4())
    reg = api.post("/api/daemon/register", json={"daemon_id": did, "name": "host", "capabilities": [],
                                                  "runtimes": [{"provider": "command", "version": "1"}]})
    d = api.as_(reg.json()["token"])
    assert api.post("/api/agents", json={"name": "a1", "provider": "command", "command": ["true"],
                                         "runtime": did}).status_code < 300
    p = api.post("/api/projects", json={"title": "Shop", "description": "the shop", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": "https://git.example.com/shop"}}]}).json()
    for title in ("first", "second"):
        api.post("/api/issues", json={"title": title, "project_id": p["id"], "assignee": "a1"})

    [item] = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    claim = Claim.from_wire(item)
    assert (claim.task.id, claim.agent.name, claim.agent.command) == (item["task"]["id"], "a1", ("true",))
    assert claim.issue.title == "first" and claim.context.project_title == "Shop"
    assert [r.resource_ref["url"] for r in claim.context.resources] == ["https://git.example.com/shop"]
    assert claim.context.workspace is not None and claim.context.workspace.id == claim.task.workspace_id
    # What the task keeps is what its daemon was sent (R-RES-7).
    assert api.as_(claim.token).get(f"/api/tasks/{claim.task.id}").json()["context"] == claim.context.to_wire()

    d.post(f"/api/daemon/tasks/{claim.task.id}/status", json={"status": "running"})
    done = d.post(f"/api/daemon/tasks/{claim.task.id}/finish", json={"status": "completed", "claim_next": 1}).json()
    [next_claim] = [Claim.from_wire(c) for c in done["claimed"]]
    assert next_claim.issue.title == "second" and next_claim.token != claim.token
