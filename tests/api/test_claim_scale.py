"""Claims at scale (issue 14, R-SC-2, R-EX-2): finish-and-claim-next in one request, and agents'
concurrency limits held when many claimers race on one database."""

from __future__ import annotations

import threading
import uuid

from sqlalchemy import func, select

from predictorx.service import tasks as task_service
from predictorx.store.schema import Daemon, Task


def _daemon(api):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": f"h-{did[:4]}",
                                                "runtimes": [{"provider": "command", "version": "1"}]})
    assert r.status_code == 200, r.text
    return did, api.as_(r.json()["token"])


def test_finish_claims_the_next_tasks_in_the_same_request(api):
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "w", "provider": "command", "command": ["true"], "max_concurrent_tasks": 2})
    for i in range(4):
        api.post("/api/issues", json={"title": f"t{i}", "assignee": "w"})
    first = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    assert len(first) == 1 and first[0]["task"]["attempt"] == 1
    done = d.post(f"/api/daemon/tasks/{first[0]['task']['id']}/finish",
                  json={"status": "completed", "claim_next": 5}).json()
    assert done["status"] == "completed"
    nxt = done["claimed"]
    # The agent's limit (2) holds inside the one request; each item carries what a claim carries.
    assert len(nxt) == 2 and {c["task"]["status"] for c in nxt} == {"dispatched"}
    assert all(c["token"].startswith("pxt_") and c["agent"]["name"] == "w" for c in nxt)
    runs = api.get("/api/tasks").json()
    assert sorted(t["status"] for t in runs) == ["completed", "dispatched", "dispatched", "queued"]
    queued = next(t for t in runs if t["status"] == "queued")
    assert queued["attempt"] == 0 and queued["daemon_id"] is None  # the one handed back is untouched
    # Without claim_next the answer is the task alone, as before.
    plain = d.post(f"/api/daemon/tasks/{nxt[0]['task']['id']}/finish", json={"status": "completed"}).json()
    assert "claimed" not in plain


def test_agent_limit_holds_with_concurrent_claimers(api, db):
    """8 claimers in threads, each its own transaction: an agent with limit 3 never holds more."""
    daemons = [_daemon(api)[0] for _ in range(8)]
    api.post("/api/agents", json={"name": "few", "provider": "command", "command": ["true"], "max_concurrent_tasks": 3})
    for i in range(12):
        api.post("/api/issues", json={"title": f"t{i}", "assignee": "few"})
    got: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(daemons))

    def claimer(daemon_id: str) -> None:
        try:
            start.wait(10)
            with db.write() as s:
                got.extend(c["task"].id for c in task_service.claim(s, s.get(Daemon, daemon_id), limit=2))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=claimer, args=(d,)) for d in daemons]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    with db.read() as s:
        held = s.scalar(select(func.count()).select_from(Task).where(Task.status == "dispatched"))
    assert len(got) == len(set(got)) == held == 3


def test_a_claim_stores_the_context_it_answers_and_a_working_token(api, db):
    """One task without resources (on PostgreSQL its context and token are written by one
    statement): the task keeps the context the daemon was given, and the token acts as the task."""
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "w", "provider": "command", "command": ["true"], "max_concurrent_tasks": 1})
    api.post("/api/issues", json={"title": "one", "assignee": "w"})
    [claimed] = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    tid = claimed["task"]["id"]
    assert claimed["context"]["workspace"]["slug"] == "default" and claimed["context"]["resources"] == []
    with db.read() as s:
        row = s.get(Task, tid)
        assert row.context == claimed["context"] and row.updated_at >= row.dispatched_at
    agent = api.as_(claimed["token"])
    assert agent.get(f"/api/tasks/{tid}").json()["context"] == claimed["context"]
