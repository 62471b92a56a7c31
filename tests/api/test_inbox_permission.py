"""A run's permission question reaches its agent's owner's inbox (service/inbox_feed.py), only
for an agent that asks: the check that an agent asks is one Core statement for every run's
`running` (issue 30); the same question from an agent that does not ask puts nothing there."""

from __future__ import annotations


QUESTION = {"event": "permission", "policy": "ask", "waiting": True, "request_id": "q1",
            "tool_call": {"toolCallId": "call-1", "title": "rm -rf build/", "kind": "execute",
                          "rawInput": {"command": "rm -rf build/"}},
            "options": [{"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}


def _daemon(api):
    return api.register_daemon("acp")


def _asks(api, daemon, agent: str, permissions: str) -> str:
    made = api.post("/api/agents", json={"name": agent, "provider": "acp", "permissions": permissions,
                                         "command": ["gemini", "--experimental-acp"]})
    assert made.status_code == 201, made.text
    api.post("/api/issues", json={"title": f"Clean for {agent}", "assignee": agent})
    task_id = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    assert daemon.post(f"/api/daemon/tasks/{task_id}/status", json={"status": "running"}).status_code == 200
    r = daemon.post(f"/api/tasks/{task_id}/messages", json={"messages": [{"seq": 0, "kind": "system", "content": QUESTION}]})
    assert r.status_code == 200, r.text
    return task_id


def _permission_items(api) -> list[dict]:
    return [i for i in api.get("/api/inbox", params={"state": "open"}).json()["items"] if i["kind"] == "permission"]


def test_only_an_agent_that_asks_puts_its_question_in_the_owners_inbox(api):
    daemon = _daemon(api)
    _asks(api, daemon, "quiet", "allow")
    assert _permission_items(api) == []
    asking = _asks(api, daemon, "gemini", "ask")
    items = _permission_items(api)
    assert [(i["task_id"], i["title"]) for i in items] == [(asking, "gemini asks you on #2: rm -rf build/")]
    assert api.post(f"/api/tasks/{asking}/answer", json={"option_id": "allow"}).status_code == 200
    assert _permission_items(api) == []  # answered: it settles
