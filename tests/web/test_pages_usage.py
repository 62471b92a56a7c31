"""The usage page and the cost on the run and issue pages (issue 27 §1–2), over HTTP: a run's usage
as its daemon reported it, its cost (or "cost unknown"), the per-day chart as inline SVG, the
budgets with their state, and a held task's wait reason."""

from __future__ import annotations

import uuid


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _reported_run(client, token, *, agent="worker", usage=None):
    did = str(uuid.uuid4())
    d = client.post("/api/daemon/register", headers=_bearer(token), json={
        "daemon_id": did, "name": "host", "runtimes": [{"provider": "command"}]}).json()["token"]
    client.post("/api/agents", headers=_bearer(token), json={"name": agent, "provider": "command",
                                                             "command": ["true"]})
    issue = client.post("/api/issues", headers=_bearer(token), json={"title": "Do it", "assignee": agent}).json()
    task_id = client.post("/api/daemon/claim", headers=_bearer(d), json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    client.post(f"/api/daemon/tasks/{task_id}/status", headers=_bearer(d), json={"status": "running"})
    r = client.post(f"/api/tasks/{task_id}/messages", headers=_bearer(d), json={
        "messages": [{"seq": 0, "kind": "text", "content": {"text": "hi"}}], "usage": usage})
    assert r.status_code == 200, r.text
    return issue["number"], task_id, d


def test_the_run_issue_and_usage_pages_show_what_runs_cost(client, token):
    number, task_id, d = _reported_run(client, token, usage={
        "model": "claude-opus-5-5", "input_tokens": 240, "output_tokens": 40, "cost_usd": 0.00176})
    run = client.get(f"/tasks/{task_id}")
    assert run.status_code == 200
    assert "claude-opus-5-5 · 240 in / 40 out · $0.0018" in run.text and "the CLI&#39;s figure" in run.text
    assert "so far" in run.text  # live: the run has not ended
    issue = client.get(f"/issues/{number}")
    assert "1 run reported usage: 280 tokens · $0.0018" in issue.text
    page = client.get("/usage")
    assert page.status_code == 200 and 'id="usage-chart"' in page.text and "<rect" in page.text
    assert "worker" in page.text and 'id="usage-total">$0.0018<' in page.text
    assert 'href="/usage"' in page.text
    agents = client.get("/agents").text  # each agent's cost this month
    assert "This month" in agents and "$0.0018" in agents and "280 tokens" in agents
    for by in ("project", "issue", "person", "model", "day"):
        assert client.get("/usage", params={"by": by}).status_code == 200
    assert client.get("/usage", params={"by": "nonsense"}).status_code == 422


def test_unknown_cost_is_said_and_a_held_task_says_why(client, token):
    number, task_id, d = _reported_run(client, token, usage={"model": "my-local-llama", "input_tokens": 5,
                                                            "output_tokens": 5})
    assert "cost unknown" in client.get(f"/tasks/{task_id}").text
    client.post("/api/budgets", headers=_bearer(token), json={"scope": "agent", "target": "worker", "period": "month",
                                                             "metric": "tokens", "limit": 5, "action": "stop"})
    client.post(f"/api/daemon/tasks/{task_id}/finish", headers=_bearer(d), json={"status": "completed"})
    again = client.post("/api/issues", headers=_bearer(token), json={"title": "More", "assignee": "worker"}).json()
    assert client.post("/api/daemon/claim", headers=_bearer(d), json={"limit": 1}).json()["tasks"] == []
    held = client.get(f"/api/issues/{again['number']}/runs", headers=_bearer(token)).json()[0]
    page = client.get(f"/tasks/{held['id']}")
    assert 'id="wait-reason"' in page.text and "hard budget reached: agent worker" in page.text
    usage = client.get("/usage").text
    assert "reached" in usage and "stop (hard)" in usage and "(+1 run of unknown cost)" in usage
