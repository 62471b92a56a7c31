"""`POST /api/daemon/tasks/{id}/push-target` (issue 22, run ended → PR opened): when its agent ends
well, the daemon running the task asks for the push target of the branch it is about to report,
pushes while it still collects the review, and reports the push with its finish. The target (the
server's relay and a pass for it, never the connection's credential) goes only to that daemon, only while the task runs, only for a
repository a connection maps and a project that pushes automatically; nothing is written. A push
reported with the finish is recorded as a separate report would be."""

from __future__ import annotations

import base64
import uuid

import pytest

from predictorx.service import relaypass

from forge_testkit import GOOD_TOKEN, KIND, registered_kit_forge


@pytest.fixture(autouse=True)
def testforge():
    with registered_kit_forge() as forge:
        yield forge


def _daemon(api, name: str) -> str:
    r = api.post("/api/daemon/register", json={"daemon_id": str(uuid.uuid4()), "name": name,
                                               "runtimes": [{"provider": "command"}]})
    assert r.status_code == 200, r.text
    return r.json()["token"]


BRANCH = {"mode": "worktree", "branch": "agent/bot/x", "repo_path": "/somewhere/app",
          "origin_url": "https://forge.test/octo/app.git", "repo_label": "/somewhere/app"}


def _running(api, ran: str) -> str:
    api.post("/api/agents", json={"name": "bot", "provider": "command", "command": ["true"]})
    api.post("/api/issues", json={"title": "t", "assignee": "bot"})
    task = api.as_(ran).post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]
    r = api.as_(ran).post(f"/api/daemon/tasks/{task['id']}/status", json={"status": "running"})
    assert r.status_code == 200, r.text
    return task["id"]


def test_the_target_only_to_the_running_tasks_daemon_and_the_push_rides_on_the_finish(api):
    ran, other = _daemon(api, "ran"), _daemon(api, "other")
    task_id = _running(api, ran)
    branch = {**BRANCH, "branch": f"agent/bot/{task_id}"}  # its own (daemon/branches.task_branch)
    url = f"/api/daemon/tasks/{task_id}/push-target"
    unmapped = api.as_(ran).post(url, json={**branch, "origin_url": "https://elsewhere.test/o/r.git"})
    assert unmapped.status_code == 200 and unmapped.json()["forge_push"] is None

    conn = api.post("/api/forges", json={"kind": KIND, "name": "gh", "base_url": "https://forge.test",
                                         "credential": GOOD_TOKEN})
    assert conn.status_code == 201, conn.text
    # A branch that is not this task's own (another task's, `main`): no target, so no relay pass.
    for name in ("agent/bot/x", f"agent/bot/{'0' * 8}-0000-4000-8000-{'0' * 12}", "main", f"main-{task_id}"):
        assert api.as_(ran).post(url, json={**branch, "branch": name}).json()["forge_push"] is None, name
    r = api.as_(other).post(url, json=branch)
    assert r.status_code == 404 and task_id in r.json()["detail"] and GOOD_TOKEN not in r.text
    r = api.post(url, json=branch)
    assert r.status_code == 403 and GOOD_TOKEN not in r.text
    assert api.as_(ran).post(url, json={**branch, "branch": "-x", "continued_from": "nope"}).status_code == 422

    r = api.as_(ran).post(url, json=branch)
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store", r.text
    target = r.json()["forge_push"]
    assert 0 < r.json()["valid_for_s"] <= 300  # asked while the agent works: used only that long
    # The server's relay and a pass for it, never the connection's credential (service/forgerelay.py).
    assert GOOD_TOKEN not in r.text and base64.b64encode(f"x:{GOOD_TOKEN}".encode()).decode()[4:] not in r.text
    assert target["branch"] == branch["branch"] and target["username"] == "predictorx-relay"
    assert target["remote_url"] == f"/api/daemon/tasks/{task_id}/git"
    assert relaypass.verify(target["token"]).remote_url == "https://forge.test/octo/app.git"
    assert target["extra"]["repo_path"] == branch["repo_path"] and target["extra"]["lease"] == ""
    assert not api.get(f"/api/tasks/{task_id}/review").json().get("branch")  # nothing was written

    sha = "b" * 40
    done = api.as_(ran).post(f"/api/daemon/tasks/{task_id}/finish", json={
        "status": "completed", "review": {**branch, "tip": sha}, "forge_pushed": {"ok": True, "sha": sha}})
    assert done.status_code == 200, done.text
    assert "forge_push" not in done.json()  # pushed already: no target in the answer
    review = api.get(f"/api/tasks/{task_id}/review").json()
    assert review["pushed"]["sha"] == sha and review["pushed"]["created"] is True
    pr = api.get(f"/api/tasks/{task_id}/pr").json()
    assert pr["branch"] == branch["branch"] and pr["head_sha"] == sha

    # The task ended: no target any more (a person's push goes through the task's own route).
    assert api.as_(ran).post(url, json=branch).json()["forge_push"] is None


def test_a_finish_whose_push_maps_nowhere_is_still_recorded(api):
    ran = _daemon(api, "ran")
    task_id = _running(api, ran)
    done = api.as_(ran).post(f"/api/daemon/tasks/{task_id}/finish", json={
        "status": "completed", "review": {**BRANCH, "origin_url": "https://elsewhere.test/o/r.git"},
        "forge_pushed": {"ok": True, "sha": "c" * 40}})
    assert done.status_code == 200, done.text
    assert api.get(f"/api/tasks/{task_id}").json()["status"] == "completed"


def test_a_project_that_pushes_only_when_asked_gets_no_target(api):
    ran = _daemon(api, "ran")
    api.post("/api/forges", json={"kind": KIND, "name": "gh", "base_url": "https://forge.test", "credential": GOOD_TOKEN})
    project = api.post("/api/projects", json={"title": "P"}).json()
    r = api.patch(f"/api/projects/{project['id']}", json={"forge_policy": {"auto_push": False}})
    assert r.status_code == 200, r.text
    api.post("/api/agents", json={"name": "bot", "provider": "command", "command": ["true"]})
    api.post("/api/issues", json={"title": "t", "assignee": "bot", "project_id": project["id"]})
    task = api.as_(ran).post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]
    api.as_(ran).post(f"/api/daemon/tasks/{task['id']}/status", json={"status": "running"})
    r = api.as_(ran).post(f"/api/daemon/tasks/{task['id']}/push-target", json=BRANCH)
    assert r.status_code == 200 and r.json()["forge_push"] is None and GOOD_TOKEN not in r.text


def test_a_push_reported_before_the_finish_records_it_and_the_finish_keeps_it(api):
    """The daemon reports its push the moment git is done, while the task still runs (the PR opens
    then, not at the finish): the report names the branch as the target was asked for it and
    carries the run's result (the PR's body). The finish's review keeps that `pushed`, and its
    answer hands out no second target (no second push, no second PR open)."""
    ran, other = _daemon(api, "ran"), _daemon(api, "other")
    task_id = _running(api, ran)
    api.post("/api/forges", json={"kind": KIND, "name": "gh", "base_url": "https://forge.test", "credential": GOOD_TOKEN})
    sha = "d" * 40
    report = {"ok": True, "sha": sha, "branch": BRANCH, "result": "Added the feature."}
    url = f"/api/daemon/tasks/{task_id}/forge-push"
    assert api.as_(other).post(url, json=report).status_code == 404
    r = api.as_(ran).post(url, json=report)
    assert r.status_code == 200 and r.json()["pull_request_id"], r.text
    pr = api.get(f"/api/tasks/{task_id}/pr").json()
    assert pr["branch"] == BRANCH["branch"] and pr["head_sha"] == sha
    task = api.get(f"/api/tasks/{task_id}").json()
    assert task["status"] == "running" and task["result"] == "Added the feature."

    done = api.as_(ran).post(f"/api/daemon/tasks/{task_id}/finish", json={
        "status": "completed", "result": "Added the feature.", "review": {**BRANCH, "tip": sha}})
    assert done.status_code == 200, done.text
    assert "forge_push" not in done.json()  # pushed already, at this tip: no target in the answer
    review = api.get(f"/api/tasks/{task_id}/review").json()
    assert review["pushed"]["sha"] == sha and review["pushed"]["created"] is True and review["tip"] == sha
    messages = api.get(f"/api/tasks/{task_id}/messages").json()
    pushes = [m for m in (messages.get("messages", messages) if isinstance(messages, dict) else messages)
              if (m.get("content") or {}).get("event") == "forge_push"]
    assert len(pushes) == 1  # recorded once
