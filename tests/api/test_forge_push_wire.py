"""The daemon-only forge wire (issue 22 §2): a task's push target and push report answer only the
daemon that ran the task — another daemon of the same workspace gets 404 (no hint the task exists),
a person 403 — and a push the server cannot place is refused with a sentence, never a 500."""

from __future__ import annotations

import uuid


def _daemon(api, name: str) -> str:
    r = api.post("/api/daemon/register", json={"daemon_id": str(uuid.uuid4()), "name": name,
                                               "runtimes": [{"provider": "command"}]})
    assert r.status_code == 200, r.text
    return r.json()["token"]


def test_only_the_daemon_that_ran_the_task(api):
    ran, other = _daemon(api, "ran"), _daemon(api, "other")
    api.post("/api/agents", json={"name": "bot", "provider": "command", "command": ["true"]})
    api.post("/api/issues", json={"title": "t", "assignee": "bot"})
    task = api.as_(ran).post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]
    review = {"mode": "worktree", "branch": f"agent/bot/{task['id']}", "repo_path": "/nowhere",
              "origin_url": "https://h/o/r.git"}
    done = api.as_(ran).post(f"/api/daemon/tasks/{task['id']}/finish", json={"status": "completed", "review": review})
    assert done.status_code == 200, done.text  # a repository no connection maps: no push asked, no error
    for path, body in (("forge-target", None), ("forge-push", {"ok": True, "sha": "a" * 40})):
        url = f"/api/daemon/tasks/{task['id']}/{path}"
        r = api.as_(other).get(url) if body is None else api.as_(other).post(url, json=body)
        assert r.status_code == 404 and task["id"] in r.json()["detail"], r.text
        r = api.get(url) if body is None else api.post(url, json=body)
        assert r.status_code == 403, r.text
    bad = api.as_(ran).post(f"/api/daemon/tasks/{task['id']}/forge-push", json={"ok": True, "sha": "not a sha"})
    assert bad.status_code == 422
    r = api.post(f"/api/tasks/{task['id']}/local-merge")
    assert r.status_code in (403, 409, 422) and r.json()["detail"]
    r = api.post(f"/api/tasks/{task['id']}/push")
    assert r.status_code == 422 and "maps to no forge connection" in r.json()["detail"]
