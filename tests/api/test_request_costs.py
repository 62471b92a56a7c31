"""What the busiest requests of an agent task cost the server (issue 30, "the platform costs
nothing"), pinned where a change cut it: a person's request learns its workspace without a
thread-pool hop, and creating an issue for an agent reads the agent and its runtime once."""

from __future__ import annotations

from sqlalchemy import event

from predictorx.server import access


def _statements(db):
    seen: list[str] = []

    def watch(_conn, _cursor, statement, *_args):
        seen.append(" ".join(statement.split()))
    event.listen(db.engine, "before_cursor_execute", watch)
    return seen, lambda: event.remove(db.engine, "before_cursor_execute", watch)


def test_a_members_request_finds_its_workspace_without_a_thread_hop_and_a_slug_still_works(api, monkeypatch):
    hops: list[str] = []
    real = access.run_in_threadpool

    async def counted(fn, *args):
        hops.append(fn.__name__)
        return await real(fn, *args)
    monkeypatch.setattr(access, "run_in_threadpool", counted)
    ws = api.get("/api/workspaces").json()[0]
    assert api.get("/api/issues").status_code == 200
    assert api.get("/api/issues", headers={"X-Workspace": ws["id"]}).status_code == 200
    assert api.get(f"/api/workspaces/{ws['id']}").status_code == 200
    assert hops == []  # (each was a hop to the thread pool for a lookup that needed no database)
    assert api.get("/api/issues", headers={"X-Workspace": ws["slug"]}).status_code == 200
    assert api.get(f"/api/workspaces/{ws['slug']}").status_code == 200
    assert hops == ["_by_slug", "_path_workspace"]  # a slug is read from the database, as before
    # Another workspace's slug: 404 from the handler, as before (never a hint that it exists).
    mia = api.as_(api.post(f"/api/workspaces/{ws['id']}/members", json={"name": "mia"}).json()["token"])
    assert mia.post("/api/workspaces", json={"name": "Hers", "slug": "hers"}).status_code == 201
    assert api.get("/api/issues", headers={"X-Workspace": "hers"}).status_code == 404
    assert api.get("/api/workspaces/hers").status_code == 404


def test_creating_an_issue_for_an_agent_reads_the_agent_and_its_runtime_once(api, db, published):
    daemon = api.register_daemon("claude")
    agent = api.post("/api/agents", json={"name": "c1", "provider": "claude"}).json()
    assert agent["runtime_id"]  # bound to the daemon's runtime: the queued event names that daemon
    seen, stop = _statements(db)
    try:
        r = api.post("/api/issues", json={"title": "x", "assignee": "c1"})
    finally:
        stop()
    assert r.status_code == 201 and r.json()["assignee_name"] == "c1"
    agents = [s for s in seen if s.startswith("SELECT") and " FROM agent " in s]
    runtimes = [s for s in seen if s.startswith("SELECT") and " FROM runtime" in s]
    assert len(agents) == 1, agents  # (the answer's assignee name read the agent again)
    assert len(runtimes) == 1, runtimes  # (the queued event read the agent's runtime again)
    queued = [e for e in published if e["type"] == "task_queued"]
    assert [e.get("runtime_daemon_id") for e in queued] == [daemon_id(api, daemon)]
    assert daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]


def daemon_id(api, daemon) -> str:
    return daemon.get("/api/me").json()["daemon_id"]


def test_a_claims_sweep_reads_only_the_parts_its_issue_has(api, db):
    daemon = api.register_daemon("claude")
    api.post("/api/agents", json={"name": "c1", "provider": "claude"})
    n = api.post("/api/issues", json={"title": "x", "assignee": "c1"}).json()["number"]
    seen, stop = _statements(db)
    try:
        claimed = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    finally:
        stop()
    sweep = claimed["sweep"]
    assert sweep["beans"] == {"counts": {}, "open": [], "open_total": 0} and sweep["instances"] == []
    assert sweep["interaction"] == {"state": "idle", "active": None, "stack": [], "pending": None}
    assert sweep["last_handoff"] is None and sweep["sibling_branches"] == []
    parts = ("FROM bean ", "FROM interaction_state ", "FROM workflow_instance ", "FROM task_handoff ")
    reads = [s for s in seen if s.startswith("SELECT") and any(p in s for p in parts)]
    assert len(reads) == 1 and reads[0].startswith("SELECT EXISTS"), reads  # (one query each)
    tid = claimed["task"]["id"]
    assert daemon.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed"}).status_code == 200
    assert api.post(f"/api/issues/{n}/beans", json={"title": "CSV writer"}).status_code in (200, 201)
    again = api.post(f"/api/tasks/{tid}/rerun")
    assert again.status_code in (200, 201), again.text
    sweep = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["sweep"]
    assert sweep["beans"]["open_total"] == 1 and sweep["beans"]["open"][0]["title"] == "CSV writer"


def test_an_agent_tasks_answers_are_encoded_in_the_routes_thread_as_fastapi_would_have(api, monkeypatch):
    """Create issue, status, messages and the runs: one trip to the thread pool each (FastAPI
    validated a returned dict against the return type in a second one), and the same bytes as
    that validation's JSON gave."""
    import fastapi.routing
    from pydantic import TypeAdapter

    from predictorx.server.safejson import dumps

    trips: list[str] = []
    real = fastapi.routing.run_in_threadpool

    async def counted(fn, *args, **kwargs):
        trips.append(getattr(fn, "__name__", "?"))
        return await real(fn, *args, **kwargs)
    daemon = api.register_daemon("claude")
    api.post("/api/agents", json={"name": "c1", "provider": "claude"})
    monkeypatch.setattr(fastapi.routing, "run_in_threadpool", counted)
    answers = []

    def call(r, status=200):
        assert r.status_code == status, r.text
        answers.append(r)
        return r.json()
    n = call(api.post("/api/issues", json={"title": "x", "body": "é \u2028 \\n", "assignee": "c1"}), 201)["number"]
    tid = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    call(daemon.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running"}))
    call(daemon.post(f"/api/tasks/{tid}/messages", json={"messages": [{"seq": 0, "kind": "text", "content": {"t": 1.5}}],
                                                         "usage": {"model": "m", "input_tokens": 3}}))
    call(api.get(f"/api/issues/{n}/runs"))
    assert trips == ["_run_sync_endpoint"] * 5  # (claim's included: it was one trip already)
    for r in answers:
        as_validated = TypeAdapter(dict | list[dict]).dump_python(r.json(), mode="json")
        assert r.content == dumps(as_validated) and r.headers["content-type"] == "application/json"


def test_a_new_issue_for_an_agent_is_made_in_eleven_statements_and_a_finish_tells_its_subscribers(api, db, app,
                                                                                                    listening):
    """A new issue has no task to look for, and its author's membership and subscription are read
    together; a finished run's review reaches the issue's subscribers who are members, read with
    their membership in one statement."""
    app.state.px.principals.ttl = 3600  # (a loaded machine may take 2 s between two requests)
    daemon = api.register_daemon("claude")
    api.post("/api/agents", json={"name": "c1", "provider": "claude"})
    ws = api.get("/api/workspaces").json()[0]["id"]
    mia = api.as_(api.post(f"/api/workspaces/{ws}/members", json={"name": "mia"}).json()["token"])
    assert api.get("/api/issues").status_code == 200  # (the owner's principal read again: a member was added)
    seen, stop = _statements(db)
    try:
        n = api.post("/api/issues", json={"title": "x", "assignee": "c1"}).json()["number"]
        made = list(seen)
    finally:
        stop()
    assert not [s for s in made if "task.active_key = " in s]  # (enqueue looked for an active task)
    assert not [s for s in made if s.startswith("SELECT member.")]  # (auto_subscribe: two reads)
    assert len([s for s in made if not s.startswith(("BEGIN", "COMMIT")) and "pg_notify" not in s]) == 10, made
    assert mia.put(f"/api/issues/{n}/subscription").status_code == 200
    tid = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    assert daemon.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running"}).status_code == 200
    seen, stop = _statements(db)
    try:
        assert daemon.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed"}).status_code == 200
    finally:
        stop()
    assert not [s for s in seen if s.startswith("SELECT member.")]  # (one read per subscriber)
    for who in (api, mia):  # both subscribed members hear of the review
        kinds = [i["kind"] for i in who.get("/api/inbox").json()["items"]]
        assert "review" in kinds, kinds


def test_an_issues_runs_are_read_with_their_agents(api, db):
    api.register_daemon("claude")
    for name in ("c1", "c2"):
        api.post("/api/agents", json={"name": name, "provider": "claude"})
    n = api.post("/api/issues", json={"title": "x", "assignee": "c1"}).json()["number"]
    assert api.post(f"/api/issues/{n}/assign", json={"assignee": "c2"}).status_code == 200
    seen, stop = _statements(db)
    try:
        runs = api.get(f"/api/issues/{n}/runs").json()
    finally:
        stop()
    assert [(r["agent_name"], r["status"]) for r in runs] == [("c1", "cancelled"), ("c2", "queued")]
    assert not [s for s in seen if s.startswith("SELECT agent.")]  # (each task's agent was a read of its own)
