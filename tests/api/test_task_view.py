"""GET /api/tasks/{id} reads the task with one Core statement (service/task_view.py, issue 30): its
answer is the one the ORM rows gave — queued (with a wait reason computed now), running, finished
— and another workspace's task, or none, is not found."""

from __future__ import annotations

import uuid

from predictorx.service import runnability, serialize, task_view
from predictorx.service import tasks as svc
from predictorx.service.errors import NotFound


def _daemon(api, providers=("claude",)):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={
        "daemon_id": did, "name": f"host-{did[:4]}", "capabilities": ["local-worktree-v1"],
        "runtimes": [{"provider": p, "version": "1.0"} for p in providers]})
    assert r.status_code == 200, r.text
    return did, api.as_(r.json()["token"])


def _as_orm_rows_gave(api, task_id: str) -> dict:
    """The answer as the route built it before: the task, its agent and its issue as ORM rows."""
    with api.client.app.state.px.read() as s:
        t = svc.get_task(s, _ws(s, task_id), task_id)
        agent, issue = svc.agent_and_issue(s, t)
        out = serialize.task(t, agent.name if agent else None, issue.number if issue else None)
        out["wait_reason"] = runnability.queued_reason(s, t, agent)
        return out


def _ws(s, task_id: str) -> str:
    from predictorx.store.schema import Task

    return s.get(Task, task_id).workspace_id


def _answer(api, task_id: str, token=None) -> dict:
    r = (api.as_(token) if token else api).get(f"/api/tasks/{task_id}")
    assert r.status_code == 200, r.text
    return r.json()


def test_the_answer_is_the_one_the_orm_rows_gave(api):
    api.post("/api/agents", json={"name": "g1", "provider": "gemini"})  # no daemon can run it
    api.post("/api/agents", json={"name": "c1", "provider": "claude"})
    waiting = api.post("/api/issues", json={"title": "waits", "assignee": "g1"}).json()
    wid = api.get(f"/api/issues/{waiting['number']}/runs").json()[0]["id"]
    got = _answer(api, wid)
    assert got["status"] == "queued" and "gemini" in (got["wait_reason"] or "")
    assert got == _as_orm_rows_gave(api, wid) and got["issue_number"] == waiting["number"]
    assert got["agent_name"] == "g1"

    _, d = _daemon(api)
    api.post("/api/issues", json={"title": "runs", "assignee": "c1"})
    claim = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    tid = claim["task"]["id"]
    d.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running"})
    running = _answer(api, tid)
    assert running["status"] == "running" and running["started_at"] and "context" not in running
    assert running == _as_orm_rows_gave(api, tid)
    assert _answer(api, tid, claim["token"])["context"] == claim["context"]  # the task's own read has it
    d.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed", "result": "done"})
    finished = _answer(api, tid)
    assert finished["status"] == "completed" and finished["result"] == "done" and finished["finished_at"]
    assert finished == _as_orm_rows_gave(api, tid)


def test_another_workspaces_task_or_none_is_not_found(api):
    api.post("/api/agents", json={"name": "g1", "provider": "gemini"})
    issue = api.post("/api/issues", json={"title": "x", "assignee": "g1"}).json()
    tid = api.get(f"/api/issues/{issue['number']}/runs").json()[0]["id"]
    assert api.get(f"/api/tasks/{uuid.uuid4()}").status_code == 404
    with api.client.app.state.px.read() as s:
        try:
            task_view.read(s, str(uuid.uuid4()), tid)
        except NotFound:
            pass
        else:
            raise AssertionError("another workspace's task was read")
