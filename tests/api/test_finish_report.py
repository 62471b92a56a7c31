"""A finished run is never lost to an odd finish report (issue 8 finding 7, R-SEC-8), and column
sizes behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid

import pytest

from predictorx.store.schema import Daemon, Task, Workspace


def _running_task(api):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": "host", "capabilities": [],
                                                "runtimes": [{"provider": "command", "version": "1"}]})
    d = api.as_(r.json()["token"])
    api.post("/api/agents", json={"name": f"a{did[:6]}", "provider": "command", "command": ["true"], "runtime": did})
    api.post("/api/issues", json={"title": "go", "assignee": f"a{did[:6]}"})
    task = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]
    assert d.post(f"/api/daemon/tasks/{task['id']}/status", json={"status": "running"}).status_code == 200
    return d, task["id"]


@pytest.mark.parametrize("report, check", [
    ({"result": "r" * 1_000_050},
     lambda t: 999_000 < len(t["result"]) <= 1_000_000 and "[truncated: " in t["result"] and t["result"].startswith("rrr")),
    ({"result": "done", "session_id": "s" * 250},  # PostgreSQL's old 200-character column: DataError
     lambda t: t["session_id"] == "s" * 250),
    ({"result": "done", "session_id": "s" * 5000},
     lambda t: 1900 < len(t["session_id"]) <= 2000 and "truncated" in t["session_id"]),
    ({"result": "final\x00text"}, lambda t: t["result"] == "final\ufffdtext"),
    ({"result": "ok", "failure_reason": "f" * 200_000, "branch_name": "b" * 900},
     lambda t: 99_000 < len(t["failure_reason"]) <= 100_000 and 400 < len(t["branch_name"]) <= 500),
])
def test_finding_07_finish_report_is_never_refused_for_size_or_content(api, report, check):
    d, task_id = _running_task(api)
    r = d.post(f"/api/daemon/tasks/{task_id}/finish", json={"status": "completed", **report})
    assert r.status_code == 200, r.text[:500]
    task = api.get(f"/api/tasks/{task_id}").json()
    assert task["status"] == "completed"
    assert check({**task, **{k: v for k, v in r.json().items() if k in ("result", "session_id", "failure_reason",
                                                                           "branch_name")}})


def test_finding_07_messages_with_nul_are_stored_on_both_backends(api):
    d, task_id = _running_task(api)
    r = d.post(f"/api/tasks/{task_id}/messages", json={"messages": [
        {"seq": 0, "kind": "text", "content": {"text": "a\x00b"}}]})
    assert r.status_code == 200, r.text
    assert api.get(f"/api/tasks/{task_id}/messages").json()[0]["content"]["text"] in ("a\x00b", "a\ufffdb")


def test_finding_07_column_sizes_are_the_same_on_both_backends(api, db):
    """What the API accepts fits the columns on PostgreSQL; what does not fit is refused alike."""
    from predictorx.store.bounded import ValueTooLong

    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": "n" * 500, "hostname": "h" * 500,
                                                "version": "v" * 100, "runtimes": [
                                                    {"provider": "command", "version": "v" * 500, "path": "/p" * 2000}]})
    assert r.status_code == 200, r.text
    r = api.post("/api/agents", json={"name": "wide", "provider": "command", "command": ["true"], "model": "m" * 500})
    assert r.status_code == 201, r.text
    with pytest.raises(ValueTooLong, match="at most 500 fit"), db.write() as s:
        s.get(Daemon, did).name = "n" * 501
    with db.read() as s:
        assert s.get(Daemon, did).name == "n" * 500
        ws_id = s.query(Workspace.id).scalar()
        assert s.get(Task, "x" * 300) is None  # reading by an over-long id is just "not found"
    assert ws_id
