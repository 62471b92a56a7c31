"""An agent's network allowlist reaches only daemons that apply it (R-SEC-9, issue 29): a daemon
that does not declare the capability (an older Predictor X) never gets the task — it would run
the agent on the open network — and the task says why; one that declares it gets the policy."""

from __future__ import annotations

import uuid


def _daemon(api, capabilities: list[str]):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": f"host-{did[:4]}",
                                               "capabilities": capabilities, "runtimes": [{"provider": "claude"}]})
    assert r.status_code == 200, r.text
    return did, api.as_(r.json()["token"])


def test_an_allowlist_agent_is_never_claimed_by_a_daemon_that_does_not_apply_it(api):
    old, old_api = _daemon(api, [])
    api.post("/api/agents", json={"name": "fenced", "provider": "claude", "runtime": old, "sandbox": True,
                                  "network": "allowlist", "allow_hosts": ["api.anthropic.com"]})
    issue = api.post("/api/issues", json={"title": "Work", "assignee": "fenced"}).json()
    assert old_api.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"] == []
    run = api.get(f"/api/issues/{issue['number']}/runs").json()[0]
    assert run["status"] in ("cancelled", "failed") and "network-allowlist-v1" in run["failure_reason"], run
    assert "open network" in run["failure_reason"]


def test_a_daemon_that_applies_allowlists_gets_the_policy_with_the_task(api):
    new, new_api = _daemon(api, ["network-allowlist-v1"])
    api.post("/api/agents", json={"name": "fenced", "provider": "claude", "runtime": new, "sandbox": True,
                                  "network": "allowlist", "allow_hosts": ["api.anthropic.com", "127.0.0.1:8080"]})
    api.post("/api/agents", json={"name": "free", "provider": "claude", "runtime": new})
    for name in ("fenced", "free"):
        api.post("/api/issues", json={"title": f"Work for {name}", "assignee": name})
    claimed = {c["agent"]["name"]: c["agent"] for c in new_api.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"]}
    assert claimed["fenced"]["network"] == "allowlist"
    assert claimed["fenced"]["allow_hosts"] == ["api.anthropic.com:443", "127.0.0.1:8080"]
    assert claimed["free"]["network"] == "open" and claimed["free"]["allow_hosts"] == []


def test_a_claim_that_refused_a_task_announces_the_queue_again(api, published):
    """A refused task took a place in the claim, so the claim answers fewer than asked while work
    is still queued: the claim says task_queued (with the owner), so daemons look again — a daemon
    reads fewer than asked as nothing more (issue 30, daemon/main.py)."""
    me = api.get("/api/me").json()["user"]["id"]
    old, old_api = _daemon(api, [])
    api.post("/api/agents", json={"name": "fenced", "provider": "claude", "runtime": old, "sandbox": True,
                                  "network": "allowlist", "allow_hosts": ["api.anthropic.com"]})
    api.post("/api/agents", json={"name": "free", "provider": "claude", "runtime": old})
    api.post("/api/issues", json={"title": "Fenced work", "assignee": "fenced"})
    api.post("/api/issues", json={"title": "Open work", "assignee": "free"})
    published.clear()
    assert old_api.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"] == []  # the fenced one, refused
    assert [e.get("owner_id") for e in published if e["type"] == "task_queued"] == [me]
    [task] = old_api.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]  # what the announcement finds
    assert task["agent"]["name"] == "free"
