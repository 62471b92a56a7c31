"""A daemon's push stream carries what the daemon acts on, and only work it may take (R-EX-2,
R-SEC-6, issue 14): a task queued for another person's agent wakes no daemon of yours (each would
make an empty claim), and people's events (task_changed, task_messages …) are not written to
every daemon of the workspace. People's pages still see everything."""

from __future__ import annotations

import json

from predictorx.server.hub import Subscriber

from tests.api.test_claim_scale import _daemon
from tests.api.test_security_authz import _add


def _events(lines):
    """The stream's events, one at a time (pings and blank lines skipped)."""
    for line in lines:
        if line.startswith("data:"):
            yield json.loads(line[5:])


def _stream(api, path: str):
    return api.client.stream("GET", path, headers={"Authorization": f"Bearer {api.token}"})


def test_a_daemon_hears_only_its_owners_queued_work_and_its_own_cancels(api):
    alice = api
    _, bob = _add(api, "Bob")
    a_id, a = _daemon(alice)
    _, b = _daemon(bob)
    alice.post("/api/agents", json={"name": "alice-bot", "provider": "command", "command": ["true"]})
    bob.post("/api/agents", json={"name": "bob-bot", "provider": "command", "command": ["true"]})
    with _stream(a, "/api/daemon/events") as ra, _stream(b, "/api/daemon/events") as rb, \
            _stream(alice, "/api/events") as rp:
        a_events, b_events, page = _events(ra.iter_lines()), _events(rb.iter_lines()), _events(rp.iter_lines())
        assert next(a_events)["type"] == next(b_events)["type"] == next(page)["type"] == "hello"
        mine = alice.post("/api/issues", json={"title": "Alice's", "assignee": "alice-bot"}).json()
        theirs = bob.post("/api/issues", json={"title": "Bob's", "assignee": "bob-bot"}).json()
        mine_task = alice.get(f"/api/issues/{mine['number']}/runs").json()[0]["id"]
        theirs_task = bob.get(f"/api/issues/{theirs['number']}/runs").json()[0]["id"]
        claimed = a.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"]
        assert [c["task"]["id"] for c in claimed] == [mine_task]  # (R-SEC-6: never Bob's)
        assert alice.post(f"/api/tasks/{mine_task}/cancel").status_code == 200

        # Alice's daemon: her task queued, then its cancel — not Bob's task, not the claim's
        # task_changed, nor the cancel's.
        first, second = next(a_events), next(a_events)
        assert (first["type"], first["task_id"]) == ("task_queued", mine_task)
        assert (second["type"], second["task_id"]) == ("task_cancelled", mine_task)
        # Bob's daemon: Bob's task first (Alice's was never written to it).
        first = next(b_events)
        assert (first["type"], first["task_id"]) == ("task_queued", theirs_task)
        # A person's page sees the whole workspace's task events, in order (among the issues' and
        # inboxes' own events: issue_changed, inbox_changed).
        seen: list[tuple[str, str | None]] = []
        while len(seen) < 3:
            e = next(page)
            if e["type"].startswith("task_"):
                seen.append((e["type"], e.get("task_id")))
        assert seen == [("task_queued", mine_task), ("task_queued", theirs_task), ("task_changed", mine_task)]


def test_every_requeue_and_freed_slot_names_whose_agent_it_is(api, published):
    """The owner travels with every task_queued the services announce, so the hub can route it."""
    me = api.get("/api/me").json()["user"]["id"]
    _, d = _daemon(api)
    api.post("/api/agents", json={"name": "one-at-a-time", "provider": "command", "command": ["true"],
                                  "max_concurrent_tasks": 1})
    for i in range(3):
        api.post("/api/issues", json={"title": f"t{i}", "assignee": "one-at-a-time"})
    first = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{first}/finish", json={"status": "completed"})  # the freed slot (hot path)
    second = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    d.post(f"/api/daemon/tasks/{second}/release")  # handed back
    queued = [e for e in published if e["type"] == "task_queued"]
    assert len(queued) == 5  # 3 assigned, 1 slot freed, 1 handed back
    assert {e.get("owner_id") for e in queued} == {me}


def test_what_a_daemon_subscriber_wants():
    daemon = Subscriber("ws", "d1", "alice")
    page = Subscriber("ws")
    for event, for_daemon in [
        ({"type": "task_queued", "owner_id": "alice"}, True),
        ({"type": "task_queued", "owner_id": "bob"}, False),
        ({"type": "task_queued"}, True),  # whose it is unknown (e.g. LISTEN was down): look
        ({"type": "task_cancelled", "daemon_id": "d1"}, True),
        ({"type": "task_cancelled", "daemon_id": "d2"}, False),
        ({"type": "task_changed", "task_id": "t"}, False),
        ({"type": "task_messages", "task_id": "t"}, False),
        ({"type": "request", "daemon_id": "d1"}, True),
        ({"type": "request", "daemon_id": "d2"}, False),
    ]:
        event = {"workspace_id": "ws", **event}
        assert daemon.wants(event) is for_daemon, event
        assert page.wants(event) is (event["type"] != "request"), event
        assert not daemon.wants({**event, "workspace_id": "other"})
