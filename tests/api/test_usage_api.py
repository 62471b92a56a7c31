"""Usage and budgets over the API (issue 27 §1–2): a run's usage reported with its messages and its
finish, priced (the CLI's figure, the workspace's own price, the price table, or unknown), rolled up;
budgets set by owners and admins only; a reached hard budget holds queued tasks with a reason and
stops a streaming run (its messages kept). On SQLite and PostgreSQL (the `db` fixture)."""

from __future__ import annotations

import uuid

import pytest


def _ws(api) -> str:
    return api.get("/api/workspaces").json()[0]["id"]


def _daemon(api):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": f"host-{did[:4]}",
                                               "runtimes": [{"provider": "command", "version": "1"}]})
    assert r.status_code == 200, r.text
    return api.as_(r.json()["token"])


def _run(api, daemon, agent="worker", title="Do it", **issue):
    api.post("/api/agents", json={"name": agent, "provider": "command", "command": ["true"]})
    r = api.post("/api/issues", json={"title": title, "assignee": agent, **issue})
    assert r.status_code == 201, r.text
    tasks = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    assert len(tasks) == 1, tasks
    task_id = tasks[0]["task"]["id"]
    assert daemon.post(f"/api/daemon/tasks/{task_id}/status", json={"status": "running"}).status_code == 200
    return task_id


def _upload(daemon, task_id, seq, usage):
    r = daemon.post(f"/api/tasks/{task_id}/messages",
                    json={"messages": [{"seq": seq, "kind": "text", "content": {"text": f"step {seq}"}}], "usage": usage})
    assert r.status_code == 200, r.text
    return r.json()


CLAUDE = {"model": "claude-sonnet-4-5", "input_tokens": 1000, "output_tokens": 100, "cache_read_tokens": 200,
          "cache_write_tokens": 10, "reasoning_tokens": 0}


def test_usage_is_stored_live_priced_and_rolled_up(api):
    daemon = _daemon(api)
    task_id = _run(api, daemon)
    assert _upload(daemon, task_id, 0, {**CLAUDE, "input_tokens": 10, "output_tokens": 1})["stop"] is None
    live = api.get(f"/api/usage/runs/{task_id}").json()
    assert live["reported"] and live["input_tokens"] == 10 and not live["final"]
    # the price table (genai-prices, offline): $3/M in, $15/M out, $0.30/M cache read, $3.75/M write
    assert live["cost_source"] == "table" and live["cost_usd"] == pytest.approx((10 * 3 + 15 + 200 * .3 + 10 * 3.75) / 1e6, abs=1e-6)
    r = daemon.post(f"/api/daemon/tasks/{task_id}/finish", json={"status": "completed",
                                                                 "usage": {**CLAUDE, "cost_usd": 0.5}})
    assert r.status_code == 200, r.text
    done = api.get(f"/api/usage/runs/{task_id}").json()
    assert done["final"] and done["cost_source"] == "cli" and done["cost_usd"] == 0.5
    assert done["total_tokens"] == 1310
    for by in ("agent", "project", "day", "issue", "person", "model", "run"):
        out = api.get("/api/usage", params={"by": by}).json()
        assert out["totals"]["runs"] == 1 and out["totals"]["cost_usd"] == 0.5, (by, out)
        assert len(out["rows"]) == 1 and out["rows"][0]["total_tokens"] == 1310
    assert api.get("/api/usage", params={"by": "agent"}).json()["rows"][0]["label"] == "worker"
    assert api.get("/api/usage", params={"by": "person"}).json()["rows"][0]["label"]
    assert api.get("/api/usage", params={"by": "nonsense"}).status_code == 422
    assert api.get("/api/usage", params={"since": "yesterday"}).status_code == 422


def test_unknown_model_is_unknown_until_the_workspace_prices_it(api):
    daemon = _daemon(api)
    local = {"model": "my-local-llama", "input_tokens": 2_000_000, "output_tokens": 1_000_000}
    first = _run(api, daemon, title="one")
    _upload(daemon, first, 0, local)
    got = api.get(f"/api/usage/runs/{first}").json()
    assert got["cost_usd"] is None and got["cost_source"] == "unknown"
    out = api.get("/api/usage").json()
    assert out["totals"]["cost_usd"] is None and out["totals"]["unknown_cost_runs"] == 1
    r = api.client.put("/api/usage/prices", headers={"Authorization": f"Bearer {api.token}"},
                       json={"model": "my-local-llama", "input": 0.1, "output": 0.2})
    assert r.status_code == 200, r.text
    daemon.post(f"/api/daemon/tasks/{first}/finish", json={"status": "completed"})
    second = _run(api, daemon, title="two")
    _upload(daemon, second, 0, {**local, "cost_usd": 9.0})  # the workspace's price wins over the CLI's
    got = api.get(f"/api/usage/runs/{second}").json()
    assert got["cost_source"] == "override" and got["cost_usd"] == pytest.approx(0.4)
    assert api.get("/api/usage/prices").json()[0]["model"] == "my-local-llama"
    assert api.delete("/api/usage/prices", params={"model": "my-local-llama"}).status_code == 200
    assert api.delete("/api/usage/prices", params={"model": "my-local-llama"}).status_code == 404


def test_only_owners_and_admins_set_budgets(api):
    r = api.post(f"/api/workspaces/{_ws(api)}/members", json={"name": "mem", "role": "member"})
    member = api.as_(r.json()["token"])
    body = {"scope": "workspace", "period": "day", "metric": "cost", "limit": 5, "action": "stop"}
    assert member.post("/api/budgets", json=body).status_code == 403
    created = api.post("/api/budgets", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["limit"] == 5 and created.json()["state"] == "ok"
    assert member.get("/api/budgets").json()[0]["id"] == created.json()["id"]
    assert member.delete(f"/api/budgets/{created.json()['id']}").status_code == 403
    again = api.post("/api/budgets", json={**body, "limit": 7}).json()  # the same budget, its limit changed
    assert again["id"] == created.json()["id"] and len(api.get("/api/budgets").json()) == 1
    assert api.post("/api/budgets", json={**body, "scope": "agent", "target": "nobody"}).status_code == 404
    assert api.post("/api/budgets", json={**body, "limit": -1}).status_code == 422
    assert api.delete(f"/api/budgets/{again['id']}").status_code == 200
    assert api.delete(f"/api/budgets/{again['id']}").status_code == 404


def test_a_reached_hard_budget_stops_the_run_and_holds_the_queue(api):
    daemon = _daemon(api)
    task_id = _run(api, daemon)
    budget = api.post("/api/budgets", json={"scope": "agent", "target": "worker", "period": "day",
                                            "metric": "tokens", "limit": 1000, "action": "stop"}).json()
    assert _upload(daemon, task_id, 0, {"model": "x", "input_tokens": 400, "output_tokens": 100})["stop"] is None
    answer = _upload(daemon, task_id, 1, {"model": "x", "input_tokens": 900, "output_tokens": 200})
    assert answer["stop"] and "agent worker" in answer["stop"] and "1,000 tokens" in answer["stop"]
    task = api.get(f"/api/tasks/{task_id}").json()
    assert task["status"] == "cancelled" and task["failure_reason"] == answer["stop"]
    # what the daemon still sends is kept, and its finish changes neither status nor reason
    _upload(daemon, task_id, 2, None)
    daemon.post(f"/api/daemon/tasks/{task_id}/finish", json={"status": "cancelled", "failure_reason": "cancelled",
                                                             "usage": {"model": "x", "input_tokens": 950,
                                                                       "output_tokens": 200}})
    seqs = [m["seq"] for m in api.get(f"/api/tasks/{task_id}/messages").json()]
    assert seqs == [0, 1, 2]
    assert api.get(f"/api/tasks/{task_id}").json()["failure_reason"] == answer["stop"]
    # the next task of that agent stays queued, saying why; another agent's runs
    r = api.post("/api/issues", json={"title": "more", "assignee": "worker"})
    number = r.json()["number"]
    api.post("/api/agents", json={"name": "other", "provider": "command", "command": ["true"]})
    api.post("/api/issues", json={"title": "elsewhere", "assignee": "other"})
    claimed = daemon.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"]
    assert [c["agent"]["name"] for c in claimed] == ["other"]
    held = api.get(f"/api/issues/{number}/runs").json()[0]
    assert held["status"] == "queued" and held["wait_reason"].startswith("hard budget reached: agent worker")
    assert api.get("/api/budgets").json()[0]["state"] == "reached"
    # removing the budget frees it
    api.delete(f"/api/budgets/{budget['id']}")
    assert api.get(f"/api/issues/{number}/runs").json()[0]["wait_reason"] is None
    claimed = daemon.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"]
    assert [c["agent"]["name"] for c in claimed] == ["worker"]


def test_a_soft_budget_only_warns(api):
    daemon = _daemon(api)
    task_id = _run(api, daemon)
    api.post("/api/budgets", json={"scope": "workspace", "period": "month", "metric": "cost", "limit": 1,
                                   "action": "warn"})
    assert _upload(daemon, task_id, 0, {**CLAUDE, "cost_usd": 2.0})["stop"] is None
    assert api.get(f"/api/tasks/{task_id}").json()["status"] == "running"
    state = api.get("/api/budgets").json()[0]
    assert state["state"] == "reached" and state["spent"] == 2.0


def test_a_workspace_hard_budget_holds_every_task(api):
    daemon = _daemon(api)
    api.post("/api/budgets", json={"scope": "workspace", "period": "day", "metric": "cost", "limit": 0,
                                   "action": "stop"})
    api.post("/api/agents", json={"name": "worker", "provider": "command", "command": ["true"]})
    number = api.post("/api/issues", json={"title": "x", "assignee": "worker"}).json()["number"]
    assert daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"] == []
    run = api.get(f"/api/issues/{number}/runs").json()[0]
    assert run["status"] == "queued" and "the workspace may spend $0.00 a day" in run["wait_reason"]


def test_the_day_sums_agree_with_the_runs_as_reports_change(api):
    """Rollups read usage_day, kept in step report by report (a run's model named late, counts
    growing, a late smaller report ignored); narrowed to an agent they read run_usage itself."""
    daemon = _daemon(api)
    first = _run(api, daemon, title="one")
    _upload(daemon, first, 0, {"input_tokens": 100, "output_tokens": 10})  # no model yet: unknown cost
    _upload(daemon, first, 1, {"model": "claude-sonnet-4-5", "input_tokens": 300, "output_tokens": 30})
    _upload(daemon, first, 2, {"model": "claude-sonnet-4-5", "input_tokens": 200, "output_tokens": 20})  # late, older
    daemon.post(f"/api/daemon/tasks/{first}/finish", json={"status": "completed"})
    second = _run(api, daemon, title="two")
    _upload(daemon, second, 0, {"model": "my-local-llama", "input_tokens": 7, "output_tokens": 3})
    for by in ("model", "day", "issue", "agent", "person", "project"):
        summed = api.get("/api/usage", params={"by": by}).json()
        direct = api.get("/api/usage", params={"by": by, "agent": "worker"}).json()  # run_usage's own rows
        assert summed["rows"] == direct["rows"] and summed["totals"] == direct["totals"], by
    models = {r["key"]: r for r in api.get("/api/usage", params={"by": "model"}).json()["rows"]}
    assert set(models) == {"claude-sonnet-4-5", "my-local-llama"}
    assert models["claude-sonnet-4-5"]["total_tokens"] == 330 and models["claude-sonnet-4-5"]["cost_usd"] > 0
    assert models["my-local-llama"]["cost_usd"] is None and models["my-local-llama"]["unknown_cost_runs"] == 1
