"""One session truth (issue 24 item 3): an agent's step makes its workflow the active one or is
refused while another is; the state shown, the sweep and the steps allowed agree; seed scenario 3
(content work in progress, a platform change arrives) asks "suspend, or file a bean?" — a person
answers, or the agent's policy does — and the answer is in the record."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

from predictorx.service import workflow_instances as instances
from predictorx.service import workflow_interaction as interaction
from predictorx.service.auth import bootstrap_owner
from predictorx.service.issues import create_issue
from predictorx.store.schema import Agent
from predictorx.workflowmcp import sweep_text
from predictorx.workflows.library import SHIPPED, load_library

from .deliveries import run_delivered


def _daemon(api):
    did = str(uuid.uuid4())
    d = api.as_(api.post("/api/daemon/register", json={
        "daemon_id": did, "name": "h", "capabilities": [], "runtimes": [{"provider": "command", "version": "1"}]}
    ).json()["token"])
    if not api.get("/api/agents").json():
        assert api.post("/api/agents", json={"name": "a1", "provider": "command", "command": ["true"]}).status_code < 300
    return d


def _token(api, d):
    claim = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    return api.as_(claim["token"]), claim["task"]["id"]


def _step(who, n, process, step, **body):
    return who.post(f"/api/issues/{n}/workflows/{process}/steps", json={"step": step, **body})


def _sweep(agent, task_id):
    return agent.get(f"/api/tasks/{task_id}/harness/sweep").json()


def test_a_step_makes_its_workflow_active_or_is_refused_saying_how_to_switch(api):
    d = _daemon(api)
    n = api.post("/api/issues", json={"title": "Add a dark mode option to the UI"}).json()["number"]
    assert [i["process_id"] for i in api.get(f"/api/issues/{n}/workflows").json()] == ["feature-request"]
    api.post(f"/api/issues/{n}/assign", json={"assignee": "a1"})
    agent, task_id = _token(api, d)
    assert agent.get(f"/api/issues/{n}/workflow-state").json()["state"] == "idle"
    assert agent.post(f"/api/issues/{n}/workflows", json={"process": "bug-triage"}).status_code == 200
    sweep = _sweep(agent, task_id)
    blocked = {i["process"]: i["blocked"] for i in sweep["instances"]}
    assert blocked["bug-triage"] is None and "bug-triage is active: suspend it first" in blocked["feature-request"]
    r = _step(agent, n, "feature-request", "capture")
    assert r.status_code == 403
    assert ("workflow 'bug-triage' is your active workflow" in r.json()["detail"]
            and f"predictorx workflow suspend {n}" in r.json()["detail"])
    assert agent.post(f"/api/issues/{n}/workflow-state/suspend", json={}).json()["state"] == "idle"
    assert _step(agent, n, "feature-request", "capture").status_code == 200  # idle: the step makes it active
    st = agent.get(f"/api/issues/{n}/workflow-state").json()
    assert (st["state"], st["active"]["process"]) == ("workflow", "feature-request")
    assert [f["process"] for f in st["stack"]] == ["bug-triage"]
    sweep = _sweep(agent, task_id)
    assert sweep["interaction"]["active"] == "feature-request"
    assert {i["process"]: i["active"] for i in sweep["instances"]} == {"feature-request": True, "bug-triage": False}
    assert _step(agent, n, "bug-triage", "reproduce").status_code == 403  # suspended: the sweep says so too
    assert "suspended" in {i["process"]: i["blocked"] for i in sweep["instances"]}["bug-triage"]


def _content_then_platform(api):
    d = _daemon(api)
    n = api.post("/api/issues", json={"title": "Why does the sync take so long?", "assignee": "a1"}).json()["number"]
    agent, task_id = _token(api, d)
    agent.daemon = d  # it ends the run (deliveries.py)
    assert agent.post(f"/api/issues/{n}/workflows", json={"process": "authoring-a-paper"}).status_code == 200
    r = api.post(f"/api/issues/{n}/workflows", json={"process": "feature-request"})
    assert r.status_code == 200 and r.json()["question"]["process"] == "feature-request"
    return n, agent, task_id


def test_a_platform_change_during_content_work_asks_and_files_a_bean_when_told(api):
    n, agent, task_id = _content_then_platform(api)
    st = agent.get(f"/api/issues/{n}/workflow-state").json()
    assert st["active"]["process"] == "authoring-a-paper" and st["stack"] == []  # not suspended silently
    assert "suspend authoring-a-paper and take the change now, or file a bean" in st["pending"]["question"]
    sweep = _sweep(agent, task_id)
    assert sweep["interaction"]["pending"]["question"] == st["pending"]["question"]
    text = sweep_text.render(sweep)
    assert f"waiting for the person: {st['pending']['question']}" in text
    assert "`feature-request` — running (version 1) — not yours now: waits for a person's answer" in text
    r = _step(agent, n, "feature-request", "capture")
    assert r.status_code == 403 and "waits for an answer" in r.json()["detail"]
    r = agent.post(f"/api/issues/{n}/workflow-state/answer", json={"answer": "suspend"})
    assert r.status_code == 403  # the person answers, or the agent's policy; never the agent itself
    r = api.post(f"/api/issues/{n}/workflow-state/answer", json={"answer": "bean", "reason": "after the paper"})
    assert r.status_code == 200 and r.json()["bean"]
    st = r.json()["state"]
    assert st["active"]["process"] == "authoring-a-paper" and st["pending"] is None
    assert [i["process_id"] for i in api.get(f"/api/issues/{n}/workflows").json()] == ["authoring-a-paper"]
    [bean] = api.get(f"/api/issues/{n}/beans").json()
    assert bean["title"].startswith("Platform change: feature-request")
    hist = api.get(f"/api/issues/{n}/workflows/authoring-a-paper").json()["history"]
    assert [(h["kind"], h["node_id"], h["outcome"], h["reason"], h["actor_type"]) for h in hist] == [
        ("session", "switch:feature-request", "bean", "after the paper", "person")]


def test_answering_suspend_takes_the_platform_change_now_and_the_content_work_waits_on_the_stack(api):
    n, agent, _ = _content_then_platform(api)
    r = api.post(f"/api/issues/{n}/workflow-state/answer", json={"answer": "suspend"})
    st = r.json()["state"]
    assert st["active"]["process"] == "feature-request" and [f["process"] for f in st["stack"]] == ["authoring-a-paper"]
    assert _step(agent, n, "feature-request", "capture").status_code == 200
    r = api.post(f"/api/issues/{n}/workflow-state/answer", json={"answer": "bean"})
    assert r.status_code == 404  # answered once


def test_the_agents_policy_answers_the_question_and_the_record_says_so(db, tmp_path: Path):
    root = tmp_path / "processes"
    shutil.copytree(SHIPPED, root)
    pol = root / "policies" / "content.jsonld"
    doc = json.loads(pol.read_text())
    doc["permission"].append({"assignee": "agent:bot", "action": "switch", "target": "authoring-a-paper.bpmn"})
    doc["prohibition"].append({"assignee": "agent:bot", "action": "switch", "target": "authoring-a-document.bpmn"})
    pol.write_text(json.dumps(doc))
    lib = load_library([root])
    with db.write() as s:
        _, ws, user = bootstrap_owner(s)
        issue = create_issue(s, ws.id, user.id, title="Why does the sync take so long?")
        bot = Agent(workspace_id=ws.id, name="bot", provider="command", command=["true"])
        s.add(bot)
        s.flush()
        outcomes = {}
        for content in ("authoring-a-paper", "authoring-a-document"):
            paper, _ = instances.start(s, lib, issue, content)
            interaction.enter(s, issue, bot.id, paper, lib)
            platform, _ = instances.start(s, lib, issue, "bug-triage")
            interaction.enter(s, issue, bot.id, platform, lib)
            [row] = [h for h in instances.history(s, paper) if h.kind == "session"]
            outcomes[content] = (row.outcome, row.verdict, row.reason.startswith("the agent's policy"))
            view = interaction.view(s, issue, bot.id)
            assert view["pending"] is None
            if content == "authoring-a-paper":  # permitted: suspended for the change
                assert view["active"]["process"] == "bug-triage"
                assert [f["process"] for f in view["stack"]] == ["authoring-a-paper"]
                interaction.suspend(s, issue, bot.id, lib)
                s.delete(platform)
                s.flush()
            else:  # prohibited: a bean is filed, the content work stays active
                assert view["active"]["process"] == "authoring-a-document"
        assert outcomes == {"authoring-a-paper": ("suspend", "permit", True),
                            "authoring-a-document": ("bean", "deny", True)}


@pytest.mark.parametrize("branch, ok", [("feat/{n}-csv", True), ("agent/a1/x", False), ("feat/1{n}-csv", False)])
def test_a_platform_branch_carries_the_issue_number(api, branch, ok):
    d = _daemon(api)
    n = api.post("/api/issues", json={"title": "Add a CSV export command to the CLI", "assignee": "a1"}).json()["number"]
    agent, task_id = _token(api, d)
    for step, who, kw in [("capture", agent, {}), ("requirements", agent, {}), ("signoff", api, {}),
                          ("approved", api, {"outcome": "approved", "reason": "ok"}), ("plan-beans", agent, {})]:
        assert _step(who, n, "feature-request", step, **kw).status_code == 200
    agent.post(f"/api/issues/{n}/beans", json={"title": "CSV writer"})
    agent, _, commit = run_delivered(api, d, task_id, branch.format(n=n), "csv")  # implement: a commit boundary
    r = _step(agent, n, "feature-request", "implement",
              produced={"bean": "CSV writer", "branch": branch.format(n=n), "commit": commit})
    assert (r.status_code == 200) is ok
    if not ok:
        assert f"does not carry the issue number {n}; name it like feat/{n}-<topic>" in r.json()["detail"]


def test_the_person_answers_the_question_on_the_issue_page(db):
    from starlette.testclient import TestClient

    from predictorx.server.app import create_app
    from predictorx.server.run import bootstrap
    from tests.api.conftest import Api

    token = bootstrap(db, "http://testserver")
    with TestClient(create_app(db, migrate=False), follow_redirects=False) as c:
        api = Api(c, token)
        n, agent, task_id = _content_then_platform(api)
        c.cookies.set("px_token", token)
        panel = c.get(f"/issues/{n}/workflows", headers={"HX-Request": "true"})
        assert "Waiting for you:" in panel.text and "or file a bean for later?" in panel.text
        r = c.post(f"/issues/{n}/workflow-state/answer", data={"answer": "suspend", "reason": "needed now"},
                   headers={"Origin": "http://testserver", "HX-Request": "true"})
        assert r.status_code == 200 and "Waiting for you:" not in r.text
        st = agent.get(f"/api/issues/{n}/workflow-state").json()
        assert st["active"]["process"] == "feature-request" and st["stack"][0]["process"] == "authoring-a-paper"
        hist = api.get(f"/api/issues/{n}/workflows/authoring-a-paper").json()["history"]
        assert [(h["outcome"], h["reason"]) for h in hist] == [("suspend", "needed now")]
        for step, who, kw in [("capture", agent, {}), ("requirements", agent, {}), ("signoff", api, {}),
                              ("approved", api, {"outcome": "approved", "reason": "ok"}), ("plan-beans", agent, {})]:
            assert _step(who, n, "feature-request", step, **kw).status_code == 200
        agent.post(f"/api/issues/{n}/beans", json={"title": "CSV writer"})
        agent, _, commit = run_delivered(api, agent.daemon, task_id, f"feat/{n}-csv", "csv")
        _step(agent, n, "feature-request", "implement",
              produced={"bean": "CSV writer", "branch": f"feat/{n}-csv", "commit": commit})
        _step(agent, n, "feature-request", "more")
        panel = c.get(f"/issues/{n}/workflows", headers={"HX-Request": "true"})
        assert ('beans to accept (computed from beans_created=0 <span class="muted">system</span>, '
                'beans_in_progress=1 <span class="muted">system</span>)') in panel.text


def test_a_workflow_waiting_for_the_answer_dispatches_no_task(db):
    from predictorx.service.workflow_dispatch import after_change
    from predictorx.workflows.engine import Actor

    lib = load_library([SHIPPED])
    with db.write() as s:
        _, ws, user = bootstrap_owner(s)
        issue = create_issue(s, ws.id, user.id, title="Why does the sync take so long?")
        bot = Agent(workspace_id=ws.id, name="bot", provider="command", command=["true"], owner_id=user.id)
        s.add(bot)
        s.flush()
        issue.assignee_type, issue.assignee_id = "agent", bot.id
        paper, _ = instances.start(s, lib, issue, "authoring-a-paper")
        interaction.enter(s, issue, bot.id, paper, lib)
        change, _ = instances.start(s, lib, issue, "feature-request")
        interaction.enter(s, issue, bot.id, change, lib)
        assert interaction.view(s, issue, bot.id)["pending"]["instance"] == change.id
        assert after_change(s, lib, issue, change) == []  # its `capture` waits for the answer
        row = interaction._row(s, issue, bot.id)
        from predictorx.service import workflow_switch
        workflow_switch.decide(s, lib, issue, row, "suspend", "now", Actor("person", user.id, "ann", frozenset()),
                               interaction.MOVES)
        assert len(after_change(s, lib, issue, change)) == 1
