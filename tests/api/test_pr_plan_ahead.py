"""`POST /api/daemon/tasks/{id}/pushing` (issue 22, run ended → PR opened): sent as the daemon's
push of a running task's branch starts, it has the server plan the PR the push report will open —
read, nothing written — so that report goes straight to the forge (service/prflow.plan_ahead). The
plan serves only the report of the same daemon, branch and result, and only while it is fresh;
anything else is read again. Only the daemon running the task may send it."""

from __future__ import annotations

import uuid

import pytest

from forgestand.fixtures import forge_standin_factory, github_standin  # noqa: F401  (fixtures)
from test_forge_loop import REPO, World, _push_branch

BRANCH = "agent/bot/issue-1-fix"  # a task's branch is agent/... (daemon/branches.task_branch)


@pytest.fixture
def world(api, github_standin, tmp_path):  # noqa: F811
    w = World(api, github_standin, tmp_path)
    w.policy(auto_pr=True, draft=False)
    return w


@pytest.fixture
def plans(monkeypatch) -> list[str]:
    """The results of the PR plans read (service/pullrequests.open_plan), in order."""
    from predictorx.service import pullrequests as prs

    read: list[str] = []
    real = prs.open_plan

    def counted(s, pr, link_base=None, result=None):
        read.append(result or "")
        return real(s, pr, link_base, result)
    monkeypatch.setattr(prs, "open_plan", counted)
    return read


def _running(world: World) -> tuple[str, str, dict]:
    world.api.post("/api/issues", json={"title": "Ahead", "project_id": world.project["id"], "assignee": "bot"})
    task_id = world.daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    world.daemon.post(f"/api/daemon/tasks/{task_id}/status", json={"status": "running"})
    sha = _push_branch(world.s, world.tmp, BRANCH, "ahead fix")
    return task_id, sha, {"mode": "checkout", "branch": BRANCH, "origin_url": world.repo.clone_url}


def _report(world: World, task_id: str, sha: str, branch: dict, result: str) -> dict:
    r = world.daemon.post(f"/api/daemon/tasks/{task_id}/forge-push",
                          json={"ok": True, "sha": sha, "branch": branch, "result": result})
    assert r.status_code == 200, r.text
    return world.pr_of(task_id)


def test_the_pr_planned_while_the_daemon_pushed_is_opened_by_its_report_without_reading_it_again(world, plans):
    task_id, sha, branch = _running(world)
    r = world.daemon.post(f"/api/daemon/tasks/{task_id}/pushing", json={"branch": branch, "result": "I did: ahead"})
    assert r.status_code == 200 and r.json() == {"planned": True}
    assert world.pr_of(task_id).get("number") is None and world.s.prs(REPO) == []  # nothing written, nothing opened
    pr = _report(world, task_id, sha, branch, "I did: ahead")
    assert pr["number"] and pr["state"] == "open" and pr["head_sha"] == sha
    assert plans == ["I did: ahead"]  # read once: while the daemon pushed
    assert "I did: ahead" in world.s.pr(REPO, pr["number"]).body


@pytest.mark.parametrize("change", ["result", "stale"])
def test_a_plan_for_another_result_or_gone_stale_is_read_again(world, plans, monkeypatch, change):
    from predictorx.service import prflow

    task_id, sha, branch = _running(world)
    world.daemon.post(f"/api/daemon/tasks/{task_id}/pushing", json={"branch": branch, "result": "first words"})
    if change == "stale":
        monkeypatch.setattr(prflow, "PLAN_KEEP", 0.0)
    result = "other words" if change == "result" else "first words"
    pr = _report(world, task_id, sha, branch, result)
    assert pr["number"] and plans == ["first words", result]
    assert result in world.s.pr(REPO, pr["number"]).body


def test_only_the_daemon_running_the_task_plans_its_pr(world, plans):
    task_id, _sha, branch = _running(world)
    reg = world.api.post("/api/daemon/register", json={"daemon_id": str(uuid.uuid4()), "name": "other",
                                                       "runtimes": [{"provider": "command"}]})
    other = world.api.as_(reg.json()["token"])
    r = other.post(f"/api/daemon/tasks/{task_id}/pushing", json={"branch": branch, "result": "x"})
    assert r.status_code == 404 and plans == []
    assert world.api.post(f"/api/daemon/tasks/{task_id}/pushing", json={"branch": branch}).status_code == 403


def test_a_task_that_is_not_running_or_opens_no_pr_plans_nothing(world, plans):
    task_id, sha, branch = _running(world)
    world.policy(auto_pr=False)
    r = world.daemon.post(f"/api/daemon/tasks/{task_id}/pushing", json={"branch": branch, "result": "x"})
    assert r.json() == {"planned": False} and plans == []
    world.policy(auto_pr=True)
    world.finish(task_id, "done", report_push=False)
    r = world.daemon.post(f"/api/daemon/tasks/{task_id}/pushing", json={"branch": branch, "result": "x"})
    assert r.json() == {"planned": False} and plans == []
