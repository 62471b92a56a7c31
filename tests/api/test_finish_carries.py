"""Fewer requests per task (issue 30), the server's side: a claim carries the task-start sweep
(what `GET …/harness/sweep` answers) and names what its finish takes (protocol.FINISH_CARRIES);
a finish carrying the handoff's git facts and the run's last messages stores them in its own
transaction as their routes do, and a retried finish (its answer lost) stores them once. An older
daemon's requests — the separate routes, a finish without them — are served as before."""

from __future__ import annotations

import uuid

from predictorx.protocol import FINISH_CARRIES


def _setup(api, title: str = "Fix the login", agent: str = "a1"):
    d = api.as_(api.post("/api/daemon/register", json={
        "daemon_id": str(uuid.uuid4()), "name": "h", "capabilities": [],
        "runtimes": [{"provider": "command", "version": "1"}]}).json()["token"])
    assert api.post("/api/agents", json={"name": agent, "provider": "command", "command": ["true"]}).status_code < 300
    n = api.post("/api/issues", json={"title": title, "assignee": agent}).json()["number"]
    [claimed] = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    return d, n, claimed


_FACTS = {"branch": "agent/a1/x", "commits": ["abc123 the fix"], "default_branch": "main",
          "default_head": "f" * 40, "result": "fixed it"}
_MESSAGES = [{"seq": 0, "kind": "text", "content": {"text": "looking"}},
             {"seq": 1, "kind": "text", "content": {"text": "fixed it"}}]


def _without_time(handoff: dict) -> dict:
    return {k: v for k, v in handoff.items() if k != "at"}


def test_a_claim_carries_the_sweep_its_task_would_ask_for(api):
    d, n, claimed = _setup(api)
    assert claimed["sweep"] == d.get(f"/api/tasks/{claimed['task']['id']}/harness/sweep").json()
    assert claimed["sweep"]["issue"]["number"] == n
    assert claimed["finish_takes"] == list(FINISH_CARRIES)


def test_a_finish_stores_the_handoff_and_messages_it_carries_as_their_routes_do(api):
    d, n, claimed = _setup(api)
    task = claimed["task"]["id"]
    r = d.post(f"/api/daemon/tasks/{task}/finish", json={"status": "completed", "result": "fixed it",
                                                         "handoff": _FACTS, "messages": _MESSAGES})
    assert r.status_code == 200, r.text
    assert [m["content"]["text"] for m in api.get(f"/api/tasks/{task}/messages").json()] == ["looking", "fixed it"]
    carried = api.get(f"/api/tasks/{task}/harness/handoff").json()
    # The same facts through the handoff's own route, then a plain finish: the same handoff.
    d2, _, claimed2 = _setup(api, "Fix the logout", "a2")
    task2 = claimed2["task"]["id"]
    assert d2.post(f"/api/tasks/{task2}/harness/handoff", json=_FACTS).status_code == 200
    assert d2.post(f"/api/daemon/tasks/{task2}/finish", json={"status": "completed", "result": "fixed it"}).status_code == 200
    alone = api.get(f"/api/tasks/{task2}/harness/handoff").json()
    assert _without_time(carried) == {**_without_time(alone), "task": task}
    assert carried["done"] == "fixed it" and carried["commits"] == _FACTS["commits"]


def test_a_retried_finish_stores_what_it_carries_once(api):
    d, _, claimed = _setup(api)
    task = claimed["task"]["id"]
    body = {"status": "completed", "result": "fixed it", "handoff": _FACTS, "messages": _MESSAGES}
    first = d.post(f"/api/daemon/tasks/{task}/finish", json=body)
    again = d.post(f"/api/daemon/tasks/{task}/finish", json=body)  # its first answer was lost
    assert first.status_code == again.status_code == 200, again.text
    assert [m["seq"] for m in api.get(f"/api/tasks/{task}/messages").json()] == [0, 1]
    assert len(api.get(f"/api/tasks/{claimed['task']['id']}/harness/handoff").json()["commits"]) == 1
    assert api.get(f"/api/tasks/{task}").json()["status"] == "completed"


def test_a_finish_for_another_daemons_task_stores_nothing_it_carries(api):
    d, _, claimed = _setup(api)
    task = claimed["task"]["id"]
    other = api.as_(api.post("/api/daemon/register", json={
        "daemon_id": str(uuid.uuid4()), "name": "h2", "capabilities": [],
        "runtimes": [{"provider": "command", "version": "1"}]}).json()["token"])
    r = other.post(f"/api/daemon/tasks/{task}/finish", json={"status": "completed", "handoff": _FACTS,
                                                             "messages": _MESSAGES})
    assert r.status_code in (403, 404, 409), r.text
    assert api.get(f"/api/tasks/{task}/messages").json() == []
    assert api.get(f"/api/tasks/{task}/harness/handoff").status_code == 404


def test_an_older_daemons_finish_and_separate_requests_are_served_as_before(api):
    d, _, claimed = _setup(api)
    task = claimed["task"]["id"]
    assert d.post(f"/api/tasks/{task}/messages", json={"messages": _MESSAGES}).status_code == 200
    assert d.post(f"/api/tasks/{task}/harness/handoff", json=_FACTS).status_code == 200
    r = d.post(f"/api/daemon/tasks/{task}/finish", json={"status": "completed", "result": "fixed it"})
    assert r.status_code == 200, r.text
    assert len(api.get(f"/api/tasks/{task}/messages").json()) == 2
    assert api.get(f"/api/tasks/{task}/harness/handoff").json()["branch"] == _FACTS["branch"]
