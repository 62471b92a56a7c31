"""Deleting an agent never takes its runs' history with it (issue 13, second round, item 4):
an agent with runs is refused deletion with a sentence offering the archive; an archived agent
leaves lists, assignment and mentions, its runs and their messages stay and show its name, and it
can be restored. Each test fails on the code that deleted runs with their agent."""

from __future__ import annotations

import uuid

from tests.api.test_security_authz import _add


def _finished_run(api) -> tuple[dict, dict]:
    """An agent `bot` with one finished run on issue 1 (with a message), and the daemon's client."""
    r = api.post("/api/daemon/register", json={"daemon_id": str(uuid.uuid4()), "name": "box",
                                               "runtimes": [{"provider": "command"}]})
    daemon = api.as_(r.json()["token"])
    assert api.post("/api/agents", json={"name": "bot", "provider": "command", "command": ["true"]}).status_code == 201
    api.post("/api/issues", json={"title": "Fix it", "assignee": "bot"})
    task = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]
    daemon.post(f"/api/tasks/{task['id']}/messages", json={"messages": [
        {"seq": 0, "kind": "text", "content": {"text": "I fixed the total."}}]})
    r = daemon.post(f"/api/daemon/tasks/{task['id']}/finish", json={"status": "completed"})
    assert r.status_code == 200, r.text
    return task, daemon


def test_an_agent_with_runs_is_not_deleted_and_the_answer_offers_the_archive(api):
    task, _ = _finished_run(api)
    r = api.delete("/api/agents/bot")
    assert r.status_code == 409
    detail = r.json()["detail"]
    assert "bot has 1 run" in detail and "predictorx agent archive bot" in detail
    assert api.get(f"/api/tasks/{task['id']}").status_code == 200
    assert [m["content"]["text"] for m in api.get(f"/api/tasks/{task['id']}/messages").json()] == ["I fixed the total."]
    # An agent that never ran is deleted as before.
    api.post("/api/agents", json={"name": "spare", "provider": "claude"})
    assert api.delete("/api/agents/spare").status_code == 204
    assert [a["name"] for a in api.get("/api/agents").json()] == ["bot"]


def test_an_archived_agent_leaves_lists_and_assignment_and_its_runs_keep_its_name(api):
    task, _ = _finished_run(api)
    r = api.post("/api/agents/bot/archive")
    assert r.status_code == 200 and r.json()["archived"] is True
    assert api.get("/api/agents").json() == []
    assert [a["name"] for a in api.get("/api/agents", params={"archived": "true"}).json()] == ["bot"]
    run = api.get(f"/api/tasks/{task['id']}").json()
    assert run["agent_name"] == "bot" and run["status"] == "completed"
    assert len(api.get(f"/api/tasks/{task['id']}/messages").json()) == 1
    assert api.get("/api/issues/1").json()["assignee_id"] is None  # its issue was unassigned

    # No new work: assignment and run-again say why; a mention queues nothing and the comment stays.
    r = api.post("/api/issues", json={"title": "More", "assignee": "bot"})
    assert r.status_code == 409 and "archived" in r.json()["detail"] and "agent restore bot" in r.json()["detail"]
    r = api.post("/api/issues/1/assign", json={"assignee": "bot"})
    assert r.status_code == 409 and "archived" in r.json()["detail"]
    r = api.post(f"/api/tasks/{task['id']}/rerun")
    assert r.status_code == 409 and "archived" in r.json()["detail"]
    assert api.post("/api/issues/1/comments", json={"body": "@bot once more please"}).status_code == 201
    assert len(api.get("/api/issues/1/runs").json()) == 1
    # Its name stays taken (its runs show it), and the answer says by whom.
    r = api.post("/api/agents", json={"name": "bot", "provider": "claude"})
    assert r.status_code == 409 and "archived agent is named 'bot'" in r.json()["detail"]

    assert api.post("/api/agents/bot/restore").json()["archived"] is False
    assert [a["name"] for a in api.get("/api/agents").json()] == ["bot"]
    assert api.post("/api/issues/1/assign", json={"assignee": "bot"}).status_code == 200


def test_archiving_follows_the_delete_rules(api):
    _finished_run(api)
    _, member = _add(api, "mallory")
    _, admin = _add(api, "alice", role="admin")
    r = member.post("/api/agents/bot/archive")
    assert r.status_code == 403 and "only its owner or a workspace admin archives it" in r.json()["detail"]
    assert member.post("/api/agents/bot/restore").status_code == 403
    assert admin.post("/api/agents/bot/archive").status_code == 200
    # Not while it has work queued or going.
    api.post("/api/agents/bot/restore")
    api.post("/api/issues", json={"title": "Busy", "assignee": "bot"})
    r = api.post("/api/agents/bot/archive")
    assert r.status_code == 409 and "cancel them first, then archive it" in r.json()["detail"]
