"""A claim that can find nothing is answered with one statement (service/claim_precheck.py, issue
30): no claim UPDATE when no task of the workspace is queued, with the claim path's answers kept —
a revoked token 401, a daemon no longer registered 404, a queued task still claimed."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, event, update

from predictorx.store.schema import Daemon, Token


def _daemon(api):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={
        "daemon_id": did, "name": f"host-{did[:4]}", "capabilities": ["local-worktree-v1"],
        "runtimes": [{"provider": "claude", "version": "1.0"}]})
    assert r.status_code == 200, r.text
    return did, api.as_(r.json()["token"])


def test_an_empty_claim_runs_no_claim_and_a_queued_task_is_still_claimed(api, db):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "c1", "provider": "claude"})
    updates: list[str] = []
    watch = _watcher(updates)
    event.listen(db.engine, "before_cursor_execute", watch)
    try:
        r = d.post("/api/daemon/claim", json={"limit": 1})
        assert r.status_code == 200 and r.json() == {"tasks": []}
        assert d.post("/api/daemon/claim", json={"limit": 1, "task_id": str(uuid.uuid4())}).json() == {"tasks": []}
        assert updates == []  # (the old path ran the claim's UPDATE … RETURNING for each)
        issue = api.post("/api/issues", json={"title": "x", "assignee": "c1"}).json()
        tid = api.get(f"/api/issues/{issue['number']}/runs").json()[0]["id"]
        updates.clear()
        assert d.post("/api/daemon/claim", json={"limit": 1, "task_id": str(uuid.uuid4())}).json() == {"tasks": []}
        assert updates == []  # another task than the one queued
        claimed = d.post("/api/daemon/claim", json={"limit": 1, "task_id": tid}).json()["tasks"]
        assert [c["task"]["id"] for c in claimed] == [tid] and updates  # queued: the claim took it
        updates.clear()
        assert d.post("/api/daemon/claim", json={"limit": 1}).json() == {"tasks": []}
        assert updates == []  # it is no longer queued
    finally:
        event.remove(db.engine, "before_cursor_execute", watch)


def _watcher(seen: list[str]):
    def watch(_conn, _cursor, statement, *_args):
        if statement.lstrip().upper().startswith("UPDATE TASK"):
            seen.append(statement)
    return watch


def test_a_revoked_token_and_a_daemon_gone_are_answered_as_before(api, db):
    did, d = _daemon(api)
    with db.write() as s:  # behind the server's back: its principal cache still holds the token
        s.execute(delete(Daemon).where(Daemon.id == did))
    r = d.post("/api/daemon/claim", json={"limit": 1})
    assert r.status_code == 404 and "no longer registered" in r.text
    did2, d2 = _daemon(api)
    assert d2.post("/api/daemon/claim", json={"limit": 1}).status_code == 200
    with db.write() as s:
        s.execute(update(Token).where(Token.daemon_id == did2, Token.kind == "daemon").values(revoked=True))
    r = d2.post("/api/daemon/claim", json={"limit": 1})
    assert r.status_code == 401, r.text


def test_a_finish_that_claims_next_with_nothing_queued_runs_no_claim(api, db):
    """A daemon's finish with claim_next (its usual end of a run) runs the claim's UPDATE only when
    a task of the workspace is queued: claimed [] from the one statement otherwise."""
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "c1", "provider": "claude", "max_concurrent_tasks": 4})
    first = api.post("/api/issues", json={"title": "a", "assignee": "c1"}).json()
    tid = api.get(f"/api/issues/{first['number']}/runs").json()[0]["id"]
    assert [c["task"]["id"] for c in d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]] == [tid]
    second = api.post("/api/issues", json={"title": "b", "assignee": "c1"}).json()
    tid2 = api.get(f"/api/issues/{second['number']}/runs").json()[0]["id"]
    claims: list[str] = []

    def watch(_conn, _cursor, statement, *_args):
        set_part = statement.split("WHERE")[0].replace(" ", "")  # the claim sets daemon_id; the finish does not
        if statement.lstrip().upper().startswith("UPDATE TASK") and "daemon_id=" in set_part:
            claims.append(statement)
    event.listen(db.engine, "before_cursor_execute", watch)
    try:
        done = d.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed", "claim_next": 2}).json()
        assert done["status"] == "completed" and [c["task"]["id"] for c in done["claimed"]] == [tid2] and claims
        claims.clear()
        done = d.post(f"/api/daemon/tasks/{tid2}/finish", json={"status": "completed", "claim_next": 2}).json()
        assert done["status"] == "completed" and done["claimed"] == []
        assert claims == []  # nothing queued: the claim's UPDATE … RETURNING did not run
    finally:
        event.remove(db.engine, "before_cursor_execute", watch)
