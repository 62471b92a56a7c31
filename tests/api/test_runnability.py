"""Agents that can run (issue 26 §2): an agent no daemon of its owner's can run is saved but says
why (`cannot_run`), and a queued task that no daemon can claim says so — computed when read, so a
daemon that went offline after the task was queued is named with when it was last seen."""

from __future__ import annotations

import uuid
from datetime import timedelta

from predictorx.store.schema import Daemon, Task, utcnow


def _daemon(api, providers, name=None):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={
        "daemon_id": did, "name": name or f"host-{did[:4]}", "capabilities": [],
        "runtimes": [{"provider": p, "version": "1.0"} for p in providers]})
    assert r.status_code == 200, r.text
    return did


def test_an_agent_whose_cli_no_daemon_has_says_how_to_get_it(api):
    _daemon(api, ("command",))
    made = api.post("/api/agents", json={"name": "c1", "provider": "claude"})
    assert made.status_code == 201, made.text
    why = made.json()["cannot_run"]
    assert "has claude" in why and "npm install -g @anthropic-ai/claude-code" in why
    runnable = api.post("/api/agents", json={"name": "cmd", "provider": "command", "command": ["true"]}).json()
    assert runnable["cannot_run"] is None
    listed = {a["name"]: a["cannot_run"] for a in api.get("/api/agents").json()}
    assert listed["cmd"] is None and "claude" in listed["c1"]


def test_a_queued_task_names_the_daemon_that_went_away(api):
    did = _daemon(api, ("gemini",), name="laptop")
    api.post("/api/agents", json={"name": "g1", "provider": "gemini"})
    issue = api.post("/api/issues", json={"title": "Fix it", "assignee": "g1"}).json()
    run = api.get(f"/api/issues/{issue['number']}/runs").json()[0]
    assert run["status"] == "queued" and run["wait_reason"] is None  # a daemon can take it
    with api.client.app.state.px.write() as s:  # the daemon stops heartbeating
        s.get(Daemon, did).last_heartbeat_at = utcnow() - timedelta(hours=3)
    run = api.get(f"/api/issues/{issue['number']}/runs").json()[0]
    assert "no online daemon of" in run["wait_reason"] and "has gemini" in run["wait_reason"]
    assert "laptop last seen 3 h ago" in run["wait_reason"]
    assert api.get(f"/api/tasks/{run['id']}").json()["wait_reason"] == run["wait_reason"]
    assert api.get("/api/agents/g1").json()["cannot_run"] == run["wait_reason"]


def test_a_budget_hold_keeps_its_reason_beside_the_missing_daemon(api):
    """A reason stored by the server (here a budget's) is kept; the live one is added to it."""
    api.post("/api/agents", json={"name": "o1", "provider": "opencode"})
    issue = api.post("/api/issues", json={"title": "Fix it", "assignee": "o1"}).json()
    run = api.get(f"/api/issues/{issue['number']}/runs").json()[0]
    with api.client.app.state.px.write() as s:
        s.get(Task, run["id"]).wait_reason = "hard budget reached: agent o1"
    said = api.get(f"/api/issues/{issue['number']}/runs").json()[0]["wait_reason"]
    assert said.startswith("hard budget reached: agent o1; ") and "has opencode" in said


def test_an_agents_ask_timeout_is_checked_and_kept(api):
    """Issue 25 §2: an `ask` agent's own wait for a person (its daemon uses it: tests/e2e/test_acp_agent.py)."""
    _daemon(api, ("acp",))
    made = api.post("/api/agents", json={"name": "asker", "provider": "acp", "command": ["peer"],
                                         "permissions": "ask", "ask_timeout_s": 45})
    assert made.status_code == 201 and made.json()["ask_timeout_s"] == 45
    assert api.post("/api/agents", json={"name": "x", "provider": "acp", "command": ["p"],
                                         "ask_timeout_s": 5}).status_code == 422
    short = api.patch("/api/agents/asker", json={"ask_timeout_s": 3})
    assert short.status_code == 422 and "from 10 to 86400" in short.json()["detail"]
    assert api.patch("/api/agents/asker", json={"instructions": "x"}).json()["ask_timeout_s"] == 45  # kept
    assert api.patch("/api/agents/asker", json={"ask_timeout_s": 0}).json()["ask_timeout_s"] is None
