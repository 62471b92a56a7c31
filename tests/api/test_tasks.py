"""Tasks over the API: queueing, claims, what a claim carries, capability, tokens, messages, sweeps."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

from predictorx.service import tasks as task_service
from predictorx.store.schema import Daemon, Task, utcnow


def _daemon(api, *, capabilities=("local-worktree-v1",), providers=("claude", "command")):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={
        "daemon_id": did, "name": f"host-{did[:4]}", "capabilities": list(capabilities),
        "runtimes": [{"provider": p, "version": "1.0"} for p in providers]})
    assert r.status_code == 200, r.text
    return did, api.as_(r.json()["token"])


def _issue(api, title="Do it", **kw):
    r = api.post("/api/issues", json={"title": title, **kw})
    assert r.status_code == 201, r.text
    return r.json()


def test_one_active_task_per_agent_and_issue(api):
    api.post("/api/agents", json={"name": "a1", "provider": "claude"})
    issue = _issue(api, assignee="a1")
    again = api.post(f"/api/issues/{issue['number']}/assign", json={"assignee": "a1"}).json()
    runs = api.get(f"/api/issues/{issue['number']}/runs").json()
    assert len(runs) == 1 and again["task"]["id"] == runs[0]["id"] and runs[0]["status"] == "queued"


def test_claim_carries_only_this_daemons_rows(api):
    """R-RES-8: the project's repos and the claiming daemon's own local_directory row, never another
    machine's path or daemon id."""
    mine, d1 = _daemon(api)
    other, _ = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "claude", "runtime": mine})
    p = api.post("/api/projects", json={"title": "P", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": "https://github.com/o/r"}},
        {"resource_type": "local_directory", "resource_ref": {"local_path": "/srv/mine", "daemon_id": mine}},
        {"resource_type": "local_directory", "resource_ref": {"local_path": "/srv/theirs-secret", "daemon_id": other}},
    ]}).json()
    _issue(api, project_id=p["id"], assignee="a1")
    claimed = d1.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"]
    assert len(claimed) == 1
    text = json.dumps(claimed[0])
    assert "/srv/theirs-secret" not in text and other not in text
    types = [r["resource_type"] for r in claimed[0]["context"]["resources"]]
    assert types == ["github_repo", "local_directory"]
    repo, folder = claimed[0]["context"]["resources"]
    assert repo["resource_ref"]["url"] == "https://github.com/o/r"
    assert folder["resource_ref"]["local_path"] == "/srv/mine" and folder["resource_ref"]["daemon_id"] == mine
    assert claimed[0]["token"].startswith("pxt_")
    assert d1.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"] == []


def test_worktree_needs_the_capability_at_save_and_at_claim(api):
    old, old_api = _daemon(api, capabilities=())
    p = api.post("/api/projects", json={"title": "W"}).json()
    r = api.post(f"/api/projects/{p['id']}/resources", json={"resource_type": "local_directory", "resource_ref": {
        "local_path": "/srv/x", "daemon_id": old, "execution_mode": "worktree"}})
    assert r.status_code == 422 and "update Predictor X on that machine" in r.json()["detail"]
    assert api.get(f"/api/projects/{p['id']}/resources").json() == []
    # Saved while the machine had it; it then restarts without it (an older Predictor X there).
    unknown = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": unknown, "name": "old", "capabilities": ["local-worktree-v1"],
                                                "runtimes": [{"provider": "claude"}]})
    late = api.as_(r.json()["token"])
    assert api.post(f"/api/projects/{p['id']}/resources", json={"resource_type": "local_directory", "resource_ref": {
        "local_path": "/srv/x", "daemon_id": unknown, "execution_mode": "worktree"}}).status_code == 201
    assert late.post("/api/daemon/register", json={"daemon_id": unknown, "name": "old", "capabilities": [],
                                                    "runtimes": [{"provider": "claude"}]}).status_code == 200
    api.post("/api/agents", json={"name": "wt", "provider": "claude", "runtime": unknown})
    issue = _issue(api, project_id=p["id"], assignee="wt")
    assert late.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"] == []
    run = api.get(f"/api/issues/{issue['number']}/runs").json()[0]
    assert run["status"] == "cancelled" and "local-worktree-v1" in run["failure_reason"]
    assert "in place" in run["failure_reason"]


def test_max_concurrent_tasks_per_agent(api):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "solo", "provider": "command", "command": ["true"], "max_concurrent_tasks": 1})
    for i in range(3):
        _issue(api, title=f"t{i}", assignee="solo")
    first = d.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"]
    assert len(first) == 1
    assert d.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"] == []
    tid = first[0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed"})
    assert len(d.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"]) == 1


def test_task_token_is_scoped_to_its_issue(api):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "claude"})
    mine = _issue(api, title="mine", assignee="a1")
    other = _issue(api, title="other")
    claim = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    agent = api.as_(claim["token"])
    assert agent.post(f"/api/issues/{mine['number']}/comments", json={"body": "on it"}).status_code == 201
    assert agent.patch(f"/api/issues/{mine['number']}", json={"status": "in_review"}).json()["status"] == "in_review"
    assert agent.patch(f"/api/issues/{mine['number']}", json={"title": "renamed"}).status_code == 403
    assert agent.post(f"/api/issues/{other['number']}/comments", json={"body": "x"}).status_code == 403
    assert agent.get(f"/api/issues/{other['number']}").status_code == 403
    assert agent.post("/api/projects", json={"title": "nope"}).status_code == 403
    assert agent.get(f"/api/tasks/{claim['task']['id']}").json()["context"] is not None
    comments = api.get(f"/api/issues/{mine['number']}/comments").json()
    assert comments[0]["author_type"] == "agent"
    d.post(f"/api/daemon/tasks/{claim['task']['id']}/finish", json={"status": "completed"})
    assert agent.get(f"/api/issues/{mine['number']}").status_code == 401  # finished: token dead


def test_messages_are_ordered_and_idempotent(api):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "claude"})
    _issue(api, assignee="a1")
    tid = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    batch = [{"seq": i, "kind": "text", "content": {"text": f"m{i}"}} for i in range(5)]
    assert d.post(f"/api/tasks/{tid}/messages", json={"messages": batch[2:]}).status_code == 200
    assert d.post(f"/api/tasks/{tid}/messages", json={"messages": batch}).status_code == 200  # a retry
    got = api.get(f"/api/tasks/{tid}/messages").json()
    assert [m["content"]["text"] for m in got] == [f"m{i}" for i in range(5)]
    bad = d.post(f"/api/tasks/{tid}/messages", json={"messages": [{"seq": 9, "kind": "shout", "content": {}}]})
    assert bad.status_code == 422
    assert len(api.get(f"/api/tasks/{tid}/messages").json()) == 5


def test_cancel_is_immediate_and_announced(api):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "claude"})
    _issue(api, assignee="a1")
    tid = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running"})
    assert api.post(f"/api/tasks/{tid}/cancel").json()["status"] == "cancelled"
    assert d.post("/api/daemon/heartbeat", json={"task_ids": [tid]}).json()["cancelled"] == [tid]
    # The daemon's late report does not resurrect it.
    d.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed", "result": "late"})
    assert api.get(f"/api/tasks/{tid}").json()["status"] == "cancelled"
    assert api.post(f"/api/tasks/{tid}/cancel").status_code == 409


def test_sweeper_requeues_unstarted_and_fails_started_tasks(api):
    did, d = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "claude", "max_concurrent_tasks": 5})
    _issue(api, title="one", assignee="a1")
    _issue(api, title="two", assignee="a1")
    claimed = d.post("/api/daemon/claim", json={"limit": 2}).json()["tasks"]
    started, unstarted = claimed[0]["task"]["id"], claimed[1]["task"]["id"]
    d.post(f"/api/daemon/tasks/{started}/status", json={"status": "running"})
    state = api.client.app.state.px
    with state.write() as s:
        s.get(Daemon, did).last_heartbeat_at = utcnow() - timedelta(minutes=5)
    with state.write() as s:
        swept = task_service.sweep(s, timedelta(seconds=30))
    assert {t.id for t in swept} == {started, unstarted}
    with state.read() as s:
        assert s.get(Task, unstarted).status == "queued"
        failed = s.get(Task, started)
        assert failed.status == "failed" and "stopped heartbeating" in failed.failure_reason


def test_daemon_restart_requeues_or_fails_what_it_held(api):
    did, d = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "claude", "max_concurrent_tasks": 5})
    _issue(api, title="one", assignee="a1")
    _issue(api, title="two", assignee="a1")
    claimed = d.post("/api/daemon/claim", json={"limit": 2}).json()["tasks"]
    d.post(f"/api/daemon/tasks/{claimed[0]['task']['id']}/status", json={"status": "running"})
    api.post("/api/daemon/register", json={"daemon_id": did, "name": "again", "runtimes": [{"provider": "claude"}]})
    statuses = {t["id"]: t["status"] for t in api.get("/api/tasks").json()}
    assert statuses[claimed[0]["task"]["id"]] == "failed"
    assert statuses[claimed[1]["task"]["id"]] == "queued"


def test_daemon_endpoints_need_a_daemon_token(api):
    assert api.post("/api/daemon/claim", json={"limit": 1}).status_code == 403
    assert api.post("/api/daemon/register", json={"daemon_id": "nope", "name": "x"}).status_code == 422


def test_the_issue_moves_along_with_its_agents_work(api):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "claude"})
    issue = _issue(api, assignee="a1")
    tid = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running"})
    assert api.get(f"/api/issues/{issue['number']}").json()["status"] == "in_progress"
    d.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed"})
    assert api.get(f"/api/issues/{issue['number']}").json()["status"] == "in_review"  # never done by itself
    blocked = _issue(api, title="parked", status="backlog")
    api.patch(f"/api/issues/{blocked['number']}", json={"status": "cancelled"})
    api.post(f"/api/issues/{blocked['number']}/assign", json={"assignee": "a1"})
    t2 = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{t2}/status", json={"status": "running"})
    assert api.get(f"/api/issues/{blocked['number']}").json()["status"] == "cancelled"


def test_an_agent_at_its_limit_does_not_hide_other_agents_work(api):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "busy", "provider": "claude", "max_concurrent_tasks": 1})
    api.post("/api/agents", json={"name": "free", "provider": "claude"})
    for i in range(10):
        _issue(api, title=f"a{i}", assignee="busy")
    _issue(api, title="b", assignee="free")
    got = [c["agent"]["name"] for _ in range(3) for c in d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]]
    assert got == ["busy", "free"]


def test_only_the_daemon_records_what_the_agent_said(api):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "claude"})
    _issue(api, assignee="a1")
    claim = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    forged = api.as_(claim["token"]).post(f"/api/tasks/{claim['task']['id']}/messages",
                                          json={"messages": [{"seq": 0, "kind": "text", "content": {"text": "FORGED"}}]})
    assert forged.status_code == 403
    issue = claim["issue"]["number"]
    done = api.as_(claim["token"]).patch(f"/api/issues/{issue}", json={"status": "done"})
    assert done.status_code == 403 and "never closes" in done.json()["detail"]


def test_reassigning_cancels_the_previous_agents_task(api):
    api.post("/api/agents", json={"name": "first", "provider": "claude"})
    api.post("/api/agents", json={"name": "second", "provider": "claude"})
    issue = _issue(api, assignee="first")
    api.post(f"/api/issues/{issue['number']}/assign", json={"assignee": "second"})
    runs = {r["agent_name"]: r for r in api.get(f"/api/issues/{issue['number']}/runs").json()}
    assert runs["first"]["status"] == "cancelled" and "reassigned" in runs["first"]["failure_reason"]
    assert runs["second"]["status"] == "queued"
    api.post(f"/api/issues/{issue['number']}/assign", json={"assignee": None})
    assert {r["status"] for r in api.get(f"/api/issues/{issue['number']}/runs").json()} == {"cancelled"}


def test_bad_ids_and_repo_urls_are_refused(api):
    r = api.post("/api/daemon/register", json={"daemon_id": "-" * 36, "name": "x"})
    assert r.status_code == 422
    ws = api.get("/api/workspaces").json()[0]["id"]
    bad = api.patch(f"/api/workspaces/{ws}", json={"repos": ["-oProxyCommand=evil"]})
    assert bad.status_code == 422 and "not a git URL" in bad.json()["detail"]
    assert api.get(f"/api/workspaces/{ws}").json()["repos"] == []
    lead = api.post("/api/projects", json={"title": "x", "lead_id": "nobody"})
    assert lead.status_code == 422 and "not a member" in lead.json()["detail"]
    p = api.post("/api/projects", json={"title": "L"}).json()
    long_label = api.post(f"/api/projects/{p['id']}/resources", json={
        "resource_type": "github_repo", "resource_ref": {"url": "https://h/o/r", "label": "x" * 5000}})
    assert long_label.status_code == 422
    assert api.get("/api/issues/foo-1").status_code == 404 and api.get("/api/issues/-1").status_code == 404


def test_a_task_its_daemon_no_longer_holds_is_not_left_running(api):
    from predictorx.service.daemons import daemon_timeout

    did, d = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "claude", "max_concurrent_tasks": 5})
    _issue(api, title="one", assignee="a1")
    _issue(api, title="two", assignee="a1")
    claimed = [c["task"]["id"] for c in d.post("/api/daemon/claim", json={"limit": 2}).json()["tasks"]]
    d.post(f"/api/daemon/tasks/{claimed[0]}/status", json={"status": "running"})
    assert d.post("/api/daemon/heartbeat", json={"task_ids": []}).json() == {"cancelled": []}
    assert {t["status"] for t in api.get("/api/tasks").json()} == {"running", "dispatched"}  # within grace
    state = api.client.app.state.px
    with state.write() as s:
        for tid in claimed:
            s.get(Task, tid).dispatched_at = utcnow() - daemon_timeout() - timedelta(seconds=1)
    d.post("/api/daemon/heartbeat", json={"task_ids": [claimed[1]]})
    statuses = {t["id"]: t for t in api.get("/api/tasks").json()}
    assert statuses[claimed[0]]["status"] == "failed" and "no longer holds" in statuses[claimed[0]]["failure_reason"]
    assert statuses[claimed[1]]["status"] == "dispatched"


def test_a_stopping_daemon_hands_back_what_it_had_not_started(api):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "claude"})
    _issue(api, assignee="a1")
    tid = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    assert d.post(f"/api/daemon/tasks/{tid}/release").json()["status"] == "queued"
    assert len(d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]) == 1


def test_a_task_nobody_can_run_says_why(api):
    api.post("/api/agents", json={"name": "lonely", "provider": "gemini"})
    issue = _issue(api, assignee="lonely")
    run = api.get(f"/api/issues/{issue['number']}/runs").json()[0]
    assert run["status"] == "queued" and "has gemini" in run["wait_reason"]
    _, d = _daemon(api, providers=("gemini",))
    claimed = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    assert claimed[0]["task"]["wait_reason"] is None
