"""The inbox and subscriptions over the API (issue 27 §3), on SQLite and PostgreSQL (the `db`
fixture): a failed run and a budget stop reach the agent's owner and the issue's subscribers only;
an assignment, a mention and a comment reach the right people; read / unread / done, the count and
paging; another member's item answers 404; subscribe and unsubscribe (kept over being the author)."""

from __future__ import annotations

import uuid


def _ws(api) -> str:
    return api.get("/api/workspaces").json()[0]["id"]


def _member(api, name: str, role: str = "member"):
    body = api.post(f"/api/workspaces/{_ws(api)}/members", json={"name": name, "role": role}).json()
    return api.as_(body["token"]), body["user_id"]


def _daemon(api):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": f"host-{did[:4]}",
                                               "runtimes": [{"provider": "command", "version": "1"}]})
    assert r.status_code == 200, r.text
    return api.as_(r.json()["token"])


def _claimed(api, daemon, agent: str, title: str) -> tuple[str, int]:
    if api.get(f"/api/agents/{agent}").status_code == 404:
        assert api.post("/api/agents", json={"name": agent, "provider": "command", "command": ["true"]}).status_code == 201
    issue = api.post("/api/issues", json={"title": title, "assignee": agent}).json()
    task_id = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    assert daemon.post(f"/api/daemon/tasks/{task_id}/status", json={"status": "running"}).status_code == 200
    return task_id, issue["number"]


def _items(who, state="open") -> list[dict]:
    r = who.get("/api/inbox", params={"state": state})
    assert r.status_code == 200, r.text
    return r.json()["items"]


def test_a_failed_run_reaches_its_owner_only_and_another_members_item_is_404(api):
    member, _ = _member(api, "mia")
    daemon = _daemon(api)
    task_id, number = _claimed(api, daemon, "worker", "Break the build")
    r = daemon.post(f"/api/daemon/tasks/{task_id}/finish", json={"status": "failed", "failure_reason": "exit code 3"})
    assert r.status_code == 200, r.text
    items = _items(api)
    assert [(i["kind"], i["state"], i["task_id"]) for i in items] == [("run_failed", "unread", task_id)]
    assert items[0]["title"] == f"worker's run on #{number} failed: Break the build"
    assert items[0]["detail"] == "exit code 3" and items[0]["link"] == f"/tasks/{task_id}"
    assert api.get("/api/inbox/count").json() == {"unread": 1}
    # the member sees nothing, and the owner's item does not exist for them
    assert _items(member, "all") == [] and member.get("/api/inbox/count").json() == {"unread": 0}
    item_id = items[0]["id"]
    assert member.get(f"/api/inbox/{item_id}").status_code == 404
    assert member.patch(f"/api/inbox/{item_id}", json={"state": "done"}).status_code == 404
    assert api.get(f"/api/inbox/{item_id}").json()["state"] == "unread"
    # read, then done: out of the open list, in the done one
    assert api.patch(f"/api/inbox/{item_id}", json={"state": "read"}).json()["state"] == "read"
    assert api.get("/api/inbox/count").json() == {"unread": 0}
    assert api.patch(f"/api/inbox/{item_id}", json={"state": "done"}).json()["state"] == "done"
    assert _items(api) == [] and [i["id"] for i in _items(api, "done")] == [item_id]
    assert api.patch(f"/api/inbox/{item_id}", json={"state": "gone"}).status_code == 422
    assert api.get("/api/inbox", params={"state": "soon"}).status_code == 422


def test_a_person_cancelling_a_run_puts_nothing_in_an_inbox(api):
    daemon = _daemon(api)
    task_id, _ = _claimed(api, daemon, "worker", "Cancel me")
    assert api.post(f"/api/tasks/{task_id}/cancel").status_code == 200
    assert _items(api, "all") == []


def test_assignment_mention_and_comment_reach_the_right_people(api):
    mia, mia_id = _member(api, "mia")
    ned, ned_id = _member(api, "ned")
    issue = api.post("/api/issues", json={"title": "Write the docs"}).json()
    number = issue["number"]
    assert api.post(f"/api/issues/{number}/assign", json={"assignee": "mia"}).status_code == 200
    mine = _items(mia)
    assert [(i["kind"], i["link"]) for i in mine] == [("assigned", f"/issues/{number}")]
    assert mia.get(f"/api/issues/{number}/subscription").json() == {"issue": number, "subscribed": True,
                                                                   "reason": "assignee"}
    assert api.get(f"/api/issues/{number}/subscription").json()["reason"] == "author"
    # ned mentions mia: mia gets a mention (not also a comment); the author gets the comment
    r = ned.post(f"/api/issues/{number}/comments", json={"body": "@mia could you also cover the CLI?"})
    assert r.status_code == 201, r.text
    assert [i["kind"] for i in _items(mia)] == ["mention", "assigned"]
    assert [i["kind"] for i in _items(api)] == ["comment"]
    assert _items(ned) == []  # nothing of their own comment
    # ned commented: now subscribed; mia unsubscribes and hears no more comments
    assert ned.get(f"/api/issues/{number}/subscription").json()["subscribed"] is True
    assert mia.delete(f"/api/issues/{number}/subscription").json()["subscribed"] is False
    api.post(f"/api/issues/{number}/comments", json={"body": "thanks"})
    assert [i["kind"] for i in _items(mia)] == ["mention", "assigned"]
    assert [i["kind"] for i in _items(ned)] == ["comment"]
    assert mia.put(f"/api/issues/{number}/subscription").json() == {"issue": number, "subscribed": True,
                                                                    "reason": "manual"}
    assert api.get("/api/issues/999/subscription").status_code == 404
    assert mia_id != ned_id


def test_paging_and_mark_all(api):
    daemon = _daemon(api)
    for n in range(5):
        task_id, _ = _claimed(api, daemon, f"w{n}", f"Fail {n}")
        daemon.post(f"/api/daemon/tasks/{task_id}/finish", json={"status": "failed", "failure_reason": "no"})
    first = api.get("/api/inbox", params={"limit": 2}).json()
    second = api.get("/api/inbox", params={"limit": 2, "cursor": first["next"]}).json()
    third = api.get("/api/inbox", params={"limit": 2, "cursor": second["next"]}).json()
    titles = [i["title"] for page in (first, second, third) for i in page["items"]]
    assert len(titles) == 5 == len(set(titles)) and third["next"] is None
    assert titles[0].endswith("Fail 4") and titles[-1].endswith("Fail 0")
    assert api.post("/api/inbox/mark-all", json={"state": "read"}).json() == {"changed": 5, "state": "read"}
    assert api.get("/api/inbox/count").json() == {"unread": 0}
    assert api.get("/api/inbox", params={"cursor": "yesterday"}).status_code == 422


def _people_lane_issue(api, stakeholder: str) -> int:
    """A feature request whose agent lane the owner holds (so no agent runs) and whose stakeholder
    lane `stakeholder` holds: after capture and requirements, the sign-off waits for them."""
    project = api.post("/api/projects", json={"title": "Exports"}).json()
    for role, name in (("agent", "owner"), ("stakeholder", stakeholder)):
        r = api.post(f"/api/projects/{project['id']}/roles", json={"role": role, "kind": "member", "name": name})
        assert r.status_code == 201, r.text
    number = api.post("/api/issues", json={"title": "CSV export", "project_id": project["id"]}).json()["number"]
    assert api.post(f"/api/issues/{number}/workflows", json={"process": "feature-request"}).status_code in (200, 201)
    for step in ("capture", "requirements"):
        r = api.post(f"/api/issues/{number}/workflows/feature-request/steps", json={"step": step})
        assert r.status_code == 200, r.text
    return number


def test_a_people_lane_step_reaches_the_members_bound_to_its_role_and_settles_when_taken(api):
    mia, _ = _member(api, "mia")
    number = _people_lane_issue(api, "mia")
    [item] = _items(mia)
    assert item["kind"] in ("step", "gate") and "waits for the stakeholder lane" in item["title"], item
    assert _items(api) == []  # the owner holds the agent lane, not this one
    r = mia.post(f"/api/issues/{number}/workflows/feature-request/steps", json={"step": "signoff"})
    assert r.status_code == 200, r.text
    after = _items(mia, "all")
    assert [i["state"] for i in after if i["id"] == item["id"]] == ["done"]  # taken: settled
    enabled = api.get(f"/api/issues/{number}/workflows/feature-request").json()["enabled"]
    waiting = [i for i in after if i["state"] == "unread"]
    assert enabled and len(waiting) == len(enabled) and {i["kind"] for i in waiting} == {"gate"}
    assert _items(api) == []


def test_a_budget_stop_and_a_review_reach_the_owner_and_subscribers(api):
    mia, mia_id = _member(api, "mia")
    daemon = _daemon(api)
    api.post("/api/agents", json={"name": "worker", "provider": "command", "command": ["true"]})
    r = api.post("/api/budgets", json={"scope": "agent", "target": "worker", "period": "day", "metric": "tokens",
                                       "limit": 1000, "action": "stop"})
    assert r.status_code == 201, r.text
    task_id, number = _claimed(api, daemon, "worker", "Loop forever")
    assert mia.put(f"/api/issues/{number}/subscription").status_code == 200
    r = daemon.post(f"/api/tasks/{task_id}/messages", json={
        "messages": [{"seq": 0, "kind": "text", "content": {"text": "step"}}],
        "usage": {"model": "x", "input_tokens": 1500, "output_tokens": 10}})
    assert r.status_code == 200 and r.json()["stop"], r.text
    for who in (api, mia):  # the agent's owner (and author), and a subscriber
        [item] = _items(who)
        assert item["kind"] == "run_budget" and item["detail"].startswith("hard budget reached: agent worker")
        assert item["title"] == f"worker's run on #{number} was stopped by a budget: Loop forever"
    # a run that completes moves its issue to in_review: the subscribers are asked to review
    api.delete(f"/api/budgets/{api.get('/api/budgets').json()[0]['id']}")
    done_id, done_number = _claimed(api, daemon, "worker", "Write the report")
    assert daemon.post(f"/api/daemon/tasks/{done_id}/finish", json={"status": "completed"}).status_code == 200
    assert api.get(f"/api/issues/{done_number}").json()["status"] == "in_review"
    review = [i for i in _items(api) if i["kind"] == "review"]
    assert [i["title"] for i in review] == [f"#{done_number} waits for your review: Write the report"]
    assert not [i for i in _items(mia) if i["kind"] == "review"] and mia_id
