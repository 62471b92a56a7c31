"""The finish a daemon reports for a task it holds, in one Core statement (service/finishing.py,
issue 14): every field of the report is kept exactly as the ORM path keeps it, the freed slot is
announced, the issue moves, and the cases it does not cover (another daemon's task, a task
cancelled meanwhile, a follow-up waiting) still get the ORM path's answers."""

from __future__ import annotations

import uuid

from predictorx.service import tasks as task_service
from predictorx.service.events import take
from predictorx.store.schema import Daemon, Task
from tests.api.test_claim_scale import _daemon  # a registered command daemon and its client


def _agent(api, name="w", limit=1):
    r = api.post("/api/agents", json={"name": name, "provider": "command", "command": ["true"],
                                      "max_concurrent_tasks": limit})
    assert r.status_code == 201, r.text


def _issue(api, title, **kw):
    r = api.post("/api/issues", json={"title": title, **kw})
    assert r.status_code == 201, r.text
    return r.json()


def test_a_held_task_finishes_with_every_field_and_announces_the_freed_slot(api, db):
    did, d = _daemon(api)
    _agent(api, limit=1)
    first = _issue(api, "one", assignee="w")
    _issue(api, "two", assignee="w")  # held back by the agent's limit of 1
    claimed = d.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"]
    assert len(claimed) == 1
    tid = claimed[0]["task"]["id"]
    assert d.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running", "branch_name": "px/one"}).status_code == 200
    review = {"files": ["a.py"], "patch": "+x\n"}
    with db.write() as s:
        t = task_service.finish(s, did, tid, status="completed", result="done", session_id="sess-1",
                                branch_name="px/one-final", review=review)
        events = take(s)
    assert t.status == "completed" and t.finished_at is not None and t.active_key is None
    assert [e["type"] for e in events] == ["task_changed", "task_queued"]  # the agent's next may run now
    assert events[0]["status"] == "completed" and events[0]["task_id"] == tid
    got = api.get(f"/api/tasks/{tid}").json()
    assert (got["status"], got["result"], got["session_id"], got["branch_name"]) == \
        ("completed", "done", "sess-1", "px/one-final")
    assert got["started_at"] is not None and got["finished_at"] is not None
    assert api.get(f"/api/tasks/{tid}/review").json() == review
    issue = api.get(f"/api/issues/{first['number']}").json()
    assert issue["status"] == "in_review"  # moved in the same statement on PostgreSQL
    with db.read() as s:
        row = s.get(Task, tid)
        assert row.updated_at >= row.finished_at  # the row's own update time moved too
    assert issue["updated_at"] >= got["finished_at"]


def test_absent_fields_are_kept_and_an_empty_branch_clears_it(api, db):
    did, d = _daemon(api)
    _agent(api, limit=2)
    _issue(api, "one", assignee="w")
    tid = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running", "branch_name": "px/kept"})
    # A failure keeps the branch it was not told about; an empty session id is no session id.
    r = d.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "failed", "failure_reason": "exit 3",
                                                         "session_id": ""})
    assert r.status_code == 200, r.text
    got = api.get(f"/api/tasks/{tid}").json()
    assert (got["status"], got["failure_reason"], got["session_id"], got["branch_name"], got["result"]) == \
        ("failed", "exit 3", None, "px/kept", None)
    _issue(api, "two", assignee="w")
    tid2 = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{tid2}/status", json={"status": "running", "branch_name": "px/two"})
    d.post(f"/api/daemon/tasks/{tid2}/finish", json={"status": "completed", "branch_name": ""})
    assert api.get(f"/api/tasks/{tid2}").json()["branch_name"] is None


def test_completed_without_a_running_report_gets_its_start_from_the_dispatch(api):
    _, d = _daemon(api)
    _agent(api)
    _issue(api, "one", assignee="w")
    tid = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed"})
    got = api.get(f"/api/tasks/{tid}").json()
    assert got["started_at"] == got["dispatched_at"] is not None


def test_what_the_core_finish_does_not_hold_gets_the_rules_answers(api):
    _, d1 = _daemon(api)
    _, d2 = _daemon(api)
    _agent(api, limit=5)
    _issue(api, "one", assignee="w")
    tid = d1.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    # Another daemon's task: refused, and the task is untouched.
    r = d2.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed"})
    assert r.status_code == 403 and "not held by this daemon" in r.json()["detail"]
    assert d1.post(f"/api/daemon/tasks/{uuid.uuid4()}/finish", json={"status": "completed"}).status_code == 404
    assert api.get(f"/api/tasks/{tid}").json()["status"] == "dispatched"
    # Cancelled meanwhile: the late report keeps what the person saw, adding only its reason.
    api.post(f"/api/tasks/{tid}/cancel")
    r = d1.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed", "result": "late",
                                                          "claim_next": 1})
    assert r.status_code == 200 and r.json()["status"] == "cancelled" and r.json()["claimed"] == []


def test_finish_and_claim_next_resumes_the_session_the_same_request_ended(api):
    """The follow-up queued when a task ends is claimed by that same request, and continues the
    session that finish just recorded (the claim sees the finish's writes in its transaction)."""
    _, d = _daemon(api)
    _agent(api, limit=1)
    issue = _issue(api, "one", assignee="w")
    tid = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running"})
    r = api.post(f"/api/issues/{issue['number']}/comments", json={"body": "@w and the docs, please"})
    assert r.status_code == 201, r.text
    done = d.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed", "session_id": "sess-9",
                                                            "claim_next": 1}).json()
    assert done["status"] == "completed" and len(done["claimed"]) == 1
    nxt = done["claimed"][0]
    assert nxt["task"]["prompt"] == "@w and the docs, please" and nxt["resume_session_id"] == "sess-9"
    assert nxt["issue"]["number"] == issue["number"] and nxt["context"]["workspace"]["slug"] == "default"


def test_the_finish_and_the_claim_do_not_send_json_documents_back(api, db):
    """A finish's review (up to 1.5 MB) and a task's context are written, not read back: the
    statements' RETURNING leaves them out, so PostgreSQL does not send them and the driver does
    not parse them again (a finish with a 1 MB review: 15.4 → 9.8 ms of CPU in-process)."""
    did, d = _daemon(api)
    _agent(api, limit=1)
    _issue(api, "one", assignee="w")
    _issue(api, "two", assignee="w")
    tid = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    review = {"files": ["a.py"], "patch": "+" + "x" * 100_000}
    with db.read() as s:
        workspace_id = s.get(Daemon, did).workspace_id
    with db.write() as s:
        t = task_service.finish(s, did, tid, status="completed", review=review)
        assert t.status == "completed" and not hasattr(t, "review") and not hasattr(t, "context")
        claimed = task_service.claim_as(s, did, workspace_id, limit=1)
        assert len(claimed) == 1 and not hasattr(claimed[0]["task"], "context")
        assert claimed[0]["context"].workspace.slug == "default"  # the answer still carries it
    assert api.get(f"/api/tasks/{tid}/review").json() == review  # stored as sent
    nxt = claimed[0]["task"].id
    assert api.get(f"/api/tasks/{nxt}").json()["status"] == "dispatched"
