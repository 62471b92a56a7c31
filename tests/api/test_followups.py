"""Follow-ups and mentions (R-EX-10): a comment mentioning an agent queues a follow-up for it with
the comment as its prompt; the next task continues the agent's CLI session where it lives."""

from __future__ import annotations

import uuid


def _daemon(api, *, providers=("claude",)):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": f"host-{did[:4]}", "capabilities": [],
                                               "runtimes": [{"provider": p, "version": "1.0"} for p in providers]})
    assert r.status_code == 200, r.text
    return did, api.as_(r.json()["token"])


def _issue(api, title="Do it", **kw):
    r = api.post("/api/issues", json={"title": title, **kw})
    assert r.status_code == 201, r.text
    return r.json()


def _runs(api, issue):
    return api.get(f"/api/issues/{issue['number']}/runs").json()


def _comment(api, issue, body):
    r = api.post(f"/api/issues/{issue['number']}/comments", json={"body": body})
    assert r.status_code == 201, r.text


def test_a_mention_queues_a_follow_up_that_resumes_the_session_on_its_daemon_only(api):
    _, d1 = _daemon(api)
    _, d2 = _daemon(api)
    api.post("/api/agents", json={"name": "claude-1", "provider": "claude"})
    issue = _issue(api, assignee="claude-1")
    first = d1.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    assert first["resume_session_id"] is None and first["task"]["prompt"] is None
    d1.post(f"/api/daemon/tasks/{first['task']['id']}/finish", json={"status": "completed", "session_id": "sess-1"})

    _comment(api, issue, "@claude-1 please also update the changelog.")
    runs = _runs(api, issue)
    assert len(runs) == 2 and runs[1]["status"] == "queued"
    assert runs[1]["prompt"] == "@claude-1 please also update the changelog."
    second = d1.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    assert second["task"]["id"] == runs[1]["id"] and second["resume_session_id"] == "sess-1"
    d1.post(f"/api/daemon/tasks/{second['task']['id']}/finish", json={"status": "completed", "session_id": "sess-2"})

    # Another machine does not hold the session: it starts afresh.
    _comment(api, issue, "@claude-1, one more thing")
    third = d2.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    assert third["task"]["prompt"] == "@claude-1, one more thing" and third["resume_session_id"] is None


def test_several_mentions_queue_one_task_per_agent_and_an_agent_never_triggers_itself(api):
    _, d = _daemon(api, providers=("claude", "codex"))
    for name, provider in (("claude-1", "claude"), ("codex-1", "codex")):
        api.post("/api/agents", json={"name": name, "provider": provider})
    issue = _issue(api)
    _comment(api, issue, "@claude-1 and @codex-1: compare notes. @claude-1 leads. @nobody @codex-1.")
    runs = _runs(api, issue)
    assert sorted(r["agent_name"] for r in runs) == ["claude-1", "codex-1"]

    claimed = {c["agent"]["name"]: c for c in d.post("/api/daemon/claim", json={"limit": 2}).json()["tasks"]}
    agent = api.as_(claimed["claude-1"]["token"])
    assert agent.post(f"/api/issues/{issue['number']}/comments",
                      json={"body": "@claude-1 note to self; @codex-1 your turn"}).status_code == 201
    runs = _runs(api, issue)
    assert len(runs) == 2  # nothing new for claude-1; codex-1 is under way, so the request waits
    d.post(f"/api/daemon/tasks/{claimed['claude-1']['task']['id']}/finish", json={"status": "completed"})
    assert len(_runs(api, issue)) == 2
    d.post(f"/api/daemon/tasks/{claimed['codex-1']['task']['id']}/finish", json={"status": "completed"})
    runs = _runs(api, issue)
    assert len(runs) == 3 and runs[2]["agent_name"] == "codex-1" and runs[2]["status"] == "queued"
    assert runs[2]["prompt"] == "@claude-1 note to self; @codex-1 your turn"


def test_requests_join_a_queued_task_and_a_cancelled_run_drops_what_waited(api):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "claude-1", "provider": "claude"})
    issue = _issue(api, assignee="claude-1")
    _comment(api, issue, "@claude-1 first")
    _comment(api, issue, "@claude-1 second")
    runs = _runs(api, issue)
    assert len(runs) == 1 and runs[0]["prompt"] == "@claude-1 first\n\n---\n\n@claude-1 second"
    task = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]
    _comment(api, issue, "@claude-1 third")
    assert api.post(f"/api/tasks/{task['id']}/cancel").status_code == 200
    assert [r["status"] for r in _runs(api, issue)] == ["cancelled"]
