"""Resource changes apply to tasks created afterwards; a run keeps what it ran with (R-RES-7).

The task's `context` is the project's resources as its daemon was given them: editing, adding or
removing resources later changes neither what the running agent sees (its own token reads its
task) nor what a finished run records, while the next task gets the new set."""

from __future__ import annotations

import uuid


def _urls(context: dict) -> list[str]:
    return [r["resource_ref"].get("url") for r in context["resources"]]


def test_resource_changes_reach_later_tasks_and_never_rewrite_a_run(api):
    did = str(uuid.uuid4())
    reg = api.post("/api/daemon/register", json={"daemon_id": did, "name": "host", "capabilities": [],
                                                  "runtimes": [{"provider": "command", "version": "1"}]})
    d = api.as_(reg.json()["token"])
    assert api.post("/api/agents", json={"name": "a1", "provider": "command", "command": ["true"],
                                         "runtime": did}).status_code < 300
    p = api.post("/api/projects", json={"title": "Shop", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": "https://git.example.com/shop/old"}}]}).json()
    url = f"/api/projects/{p['id']}/resources"
    old_id = p["resources"][0]["id"]

    api.post("/api/issues", json={"title": "first", "project_id": p["id"], "assignee": "a1"})
    [first] = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    assert _urls(first["context"]) == ["https://git.example.com/shop/old"]
    tid, agent = first["task"]["id"], api.as_(first["token"])
    d.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running"})

    # The person changes the project's resources while the first task runs.
    assert api.patch(f"{url}/{old_id}", json={"resource_ref": {"url": "https://git.example.com/shop/new"}}).status_code == 200
    assert api.post(url, json={"resource_type": "github_repo",
                               "resource_ref": {"url": "https://git.example.com/shop/docs"}}).status_code == 201
    assert _urls(agent.get(f"/api/tasks/{tid}").json()["context"]) == ["https://git.example.com/shop/old"]

    d.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed"})
    api.post("/api/issues", json={"title": "second", "project_id": p["id"], "assignee": "a1"})
    [second] = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    assert _urls(second["context"]) == ["https://git.example.com/shop/new", "https://git.example.com/shop/docs"]

    assert api.delete(f"{url}/{old_id}").status_code == 204  # even the row both ran with goes
    finished = d.get(f"/api/tasks/{tid}").json()
    assert finished["status"] == "completed"
    assert _urls(finished["context"]) == ["https://git.example.com/shop/old"]
    assert _urls(d.get(f"/api/tasks/{second['task']['id']}").json()["context"]) == [
        "https://git.example.com/shop/new", "https://git.example.com/shop/docs"]
