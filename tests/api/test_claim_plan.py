"""A claim's cost must not grow with the queue or with the team's running work (issue 14): on
PostgreSQL the claiming statement walks the workspace's queued tasks in claim order
(ix_task_queue_order) and stops at the first it may take. Its first form joined every queued task
to its agent and sorted them all before taking one, 18 ms of PostgreSQL CPU per claim at 600
queued tasks; until 2026-12-02 it also counted every held task of the workspace to find the agents
at their limit."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import event, insert

from predictorx.service import claiming
from predictorx.store.schema import Issue, Task, utcnow

QUEUED = 400
ELSEWHERE_AGENTS, HELD_EACH = 5, 60


def _plan_nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _plan_nodes(child)


def test_claim_walks_the_queue_in_order_and_stops_early(api, db):
    if db.engine.dialect.name != "postgresql":
        pytest.skip("the plan is PostgreSQL's; SQLite has one writer and no SKIP LOCKED")
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": "plan",
                                                "runtimes": [{"provider": "command", "version": "1"}]})
    assert r.status_code == 200, r.text
    for name in ("a", "b", "c"):
        api.post("/api/agents", json={"name": name, "provider": "command", "command": ["true"],
                                      "max_concurrent_tasks": 2})
    # Other agents of the workspace, which this daemon cannot run, busy with many tasks: what they
    # hold is no concern of this claim and must not be read (the team's running work).
    for i in range(ELSEWHERE_AGENTS):
        r = api.post("/api/agents", json={"name": f"elsewhere-{i}", "provider": "claude", "max_concurrent_tasks": 64})
        assert r.status_code in (200, 201), r.text
    agents = {a["name"]: a for a in api.get("/api/agents").json()}
    api.post("/api/issues", json={"title": "seed", "assignee": "a"})
    seed = api.get("/api/tasks").json()[0]
    ws_id = seed["workspace_id"]
    # Agent "a" is at its limit (its tasks are older: a claim must look past them), then many queued.
    now = utcnow()
    issues, tasks = [], []
    for i in range(QUEUED):
        issue_id, agent = str(uuid.uuid4()), agents["a" if i < 50 else ("b" if i % 2 else "c")]
        issues.append({"id": issue_id, "workspace_id": ws_id, "number": 1000 + i, "title": f"q{i}",
                       "body": "", "status": "todo", "priority": "none", "assignee_type": "agent",
                       "assignee_id": agent["id"], "created_at": now, "updated_at": now})
        tasks.append({"id": str(uuid.uuid4()), "workspace_id": ws_id, "issue_id": issue_id, "agent_id": agent["id"],
                      "status": "queued", "attempt": 0, "message_seq": 0,
                      "created_at": now + timedelta(milliseconds=i), "updated_at": now})
    busy = []
    for i in range(ELSEWHERE_AGENTS * HELD_EACH):
        issue_id, holder = str(uuid.uuid4()), agents[f"elsewhere-{i % ELSEWHERE_AGENTS}"]
        issues.append({"id": issue_id, "workspace_id": ws_id, "number": 5000 + i, "title": f"r{i}",
                       "body": "", "status": "in_progress", "priority": "none", "assignee_type": "agent",
                       "assignee_id": holder["id"], "created_at": now, "updated_at": now})
        busy.append({"id": str(uuid.uuid4()), "workspace_id": ws_id, "issue_id": issue_id,
                     "agent_id": holder["id"], "status": "running", "attempt": 1, "message_seq": 0,
                     "created_at": now - timedelta(minutes=1), "updated_at": now})
    with db.write() as s:
        s.execute(insert(Issue.__table__), issues)
        s.execute(insert(Task.__table__), busy)
        s.execute(insert(Task.__table__), tasks)
        s.execute(Task.__table__.update().where(Task.__table__.c.id.in_([t["id"] for t in tasks[:2]]))
                  .values(status="running", daemon_id=did))
    with db.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE task")
        conn.commit()
        explain = lambda *a: ("EXPLAIN (ANALYZE, FORMAT JSON) " + a[2], a[3])
        event.listen(conn, "before_cursor_execute", explain, retval=True)
        try:
            rows = conn.execute(claiming._MARK[(False, True)], {
                "p_daemon": did, "p_ws": ws_id, "p_limit": 1, "p_now": now, "p_lease": now + timedelta(minutes=5)})
            [[plan]] = [tuple(r)[:1] for r in rows.cursor.fetchall()]
        finally:
            event.remove(conn, "before_cursor_execute", explain)
            conn.rollback()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    nodes = list(_plan_nodes(plan[0]["Plan"]))
    lock = next(n for n in nodes if n["Node Type"] == "LockRows")
    below = list(_plan_nodes(lock))
    scans = [n for n in below if n.get("Relation Name") == "task"]
    assert not any(n["Node Type"] == "Sort" for n in below), "the queue is sorted before a task is taken"
    assert [n.get("Index Name") for n in scans] == ["ix_task_queue_order"], scans
    # It read the oldest queued tasks of agents it may run and stopped: agent "a" is full, so its
    # 48 queued tasks are passed over, but not the hundreds behind the first task of "b" or "c".
    assert scans[0]["Actual Rows"] * scans[0]["Actual Loops"] <= 5, scans[0]
    assert plan[0]["Plan"]["Actual Rows"] == 1
    # Which agents may take more is counted per agent: the other agents' 300 running tasks
    # are never read (a GROUP BY over the workspace's held tasks read every one of them).
    read = sum(n["Actual Rows"] * n["Actual Loops"] for n in nodes if n.get("Relation Name") == "task")
    assert read <= 20, [(n["Node Type"], n.get("Index Name"), n["Actual Rows"], n["Actual Loops"])
                        for n in nodes if n.get("Relation Name") == "task"]
