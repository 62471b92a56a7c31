"""The harness over HTTP: classification starts the workflow, lanes and roles, gates, strict
policy, suspend/resume, beans, the record and qaqc (R-HAR-1…8)."""

from __future__ import annotations

import uuid

from predictorx.workflows import qaqc
from predictorx.workflows.library import SHIPPED, load_library

from .deliveries import run_delivered


def _agent_token(api, title, **kw):
    did = str(uuid.uuid4())
    d = api.as_(api.post("/api/daemon/register", json={
        "daemon_id": did, "name": "h", "capabilities": [], "runtimes": [{"provider": "command", "version": "1"}]}
    ).json()["token"])
    if not api.get("/api/agents").json():
        assert api.post("/api/agents", json={"name": "a1", "provider": "command", "command": ["true"]}).status_code < 300
    issue = api.post("/api/issues", json={"title": title, "assignee": "a1", **kw}).json()
    claim = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    agent = api.as_(claim["token"])
    agent.daemon, agent.task_id = d, claim["task"]["id"]  # its daemon ends the run (deliveries.py)
    return issue, agent


def _step(who, n, process, step, **body):
    return who.post(f"/api/issues/{n}/workflows/{process}/steps", json={"step": step, **body})


def test_feature_request_end_to_end_over_http(api):
    issue, agent = _agent_token(api, "Add a CSV export command to the CLI")
    n = issue["number"]
    [c] = api.get(f"/api/issues/{n}/classifications").json()
    assert (c["category"], c["method"], c["workflow"]) == ("feature_request", "table", "feature-request")
    [inst] = agent.get(f"/api/issues/{n}/workflows").json()
    assert inst["process_id"] == "feature-request" and [e["node"] for e in inst["enabled"]] == ["capture"]
    assert agent.get(f"/api/issues/{n}/workflow-state").json()["state"] == "workflow"
    assert _step(agent, n, "feature-request", "capture").status_code == 200
    assert _step(agent, n, "feature-request", "requirements").status_code == 200
    r = _step(agent, n, "feature-request", "signoff")
    assert r.status_code == 403 and "is for role stakeholder; agent a1 holds agent" in r.json()["detail"]
    assert _step(api, n, "feature-request", "signoff").status_code == 200
    r = _step(api, n, "feature-request", "approved", outcome="approved")
    assert r.status_code == 403 and "needs a reason" in r.json()["detail"]
    assert _step(api, n, "feature-request", "approved", outcome="approved", reason="scope agreed").status_code == 200
    assert _step(agent, n, "feature-request", "plan-beans").status_code == 200
    one = agent.post(f"/api/issues/{n}/beans", json={"title": "CSV writer"}).json()
    two = agent.post(f"/api/issues/{n}/beans", json={"title": "CSV writer"}).json()
    assert one["created"] and not two["created"] and one["id"] == two["id"]
    # the run commits and ends; its daemon reports the commit; the next task takes the commit boundary
    agent, _, commit = run_delivered(api, agent.daemon, agent.task_id, f"feat/{n}-csv-export", "csv")
    work = {"bean": "CSV writer", "branch": f"feat/{n}-csv-export", "commit": commit}
    assert _step(agent, n, "feature-request", "implement", produced=work).status_code == 200
    assert agent.get(f"/api/issues/{n}/beans/CSV writer").json()["status"] == "in-progress"
    r = _step(agent, n, "feature-request", "more", outcome="all done")
    assert r.status_code == 403 and "passed by hand is refused" in r.json()["detail"]
    api.post(f"/api/issues/{n}/beans/CSV writer/resolve", json={})  # the stakeholder resolves it
    r = _step(agent, n, "feature-request", "more")
    assert r.json()["step"]["outcome"] == "all done" and r.json()["step"]["computed"]
    assert r.json()["step"]["facts"] == {"beans_created": 0, "beans_in_progress": 0}
    assert r.json()["step"]["fact_sources"] == {"beans_created": "system", "beans_in_progress": "system"}
    r = _step(agent, n, "feature-request", "review")
    assert r.status_code == 403
    shown = api.get(f"/api/issues/{n}/workflows/feature-request").json()
    assert [h["node_id"] for h in shown["history"]] == ["capture", "requirements", "signoff", "approved",
                                                          "plan-beans", "implement", "bean:resolve", "more"]
    assert api.patch(f"/api/issues/{n}", json={"status": "done"}).status_code == 200  # a person closes
    prov = api.get(f"/api/issues/{n}/workflows/feature-request/prov").json()
    assert any(node.get("@type") == "prov:Activity" for node in prov["@graph"])


def test_strict_deny_is_refused_recorded_and_reported_by_qaqc(api):
    project = api.post("/api/projects", json={"title": "p"}).json()
    issue, agent = _agent_token(api, "Add support for Excel uploads to the platform", project_id=project["id"])
    n = issue["number"]
    _step(agent, n, "feature-request", "capture")
    _step(agent, n, "feature-request", "requirements")
    # bound to the stakeholder role, the agent holds the lane's role — and the team policy still forbids it
    r = api.post(f"/api/projects/{project['id']}/roles", json={"role": "stakeholder", "kind": "agent", "name": "a1"})
    assert r.status_code == 201
    r = _step(agent, n, "feature-request", "signoff")
    assert r.status_code == 403 and "under strict policy and denied" in r.json()["detail"]
    shown = api.get(f"/api/issues/{n}/workflows/feature-request").json()
    assert [e["node"] for e in shown["enabled"]] == ["signoff"] and shown["history"][-1]["status"] == "refused"
    rec = api.get("/api/workflows/record", params={"issue": n}).json()["records"]
    rep = qaqc.report(load_library([SHIPPED]), rec)
    assert [(f["node"], f["finding"]) for f in rep["findings"]] == [("signoff", "refused")]
    # now the stakeholder binding excludes people who are not bound: the owner may no longer sign off
    r = _step(api, n, "feature-request", "signoff")
    assert r.status_code == 403 and "is for role stakeholder" in r.json()["detail"]


def test_suspend_and_resume_are_last_in_first_out(api):
    issue, agent = _agent_token(api, "Add a dark mode option to the UI")
    n = issue["number"]
    for process in ("bug-triage", "evidence-retrieval"):
        assert agent.post(f"/api/issues/{n}/workflows", json={"process": process}).status_code == 200
    st = agent.get(f"/api/issues/{n}/workflow-state").json()
    assert st["active"]["process"] == "evidence-retrieval"
    assert [f["process"] for f in st["stack"]] == ["bug-triage", "feature-request"]
    assert st["stack"][0]["activity"] == ["reproduce"]
    r = agent.post(f"/api/issues/{n}/workflow-state/resume", json={})
    assert r.status_code == 409 and "suspend or finish it" in r.json()["detail"]
    agent.post(f"/api/issues/{n}/workflow-state/suspend", json={})
    assert agent.post(f"/api/issues/{n}/workflow-state/resume", json={}).json()["active"]["process"] == "evidence-retrieval"
    r = _step(agent, n, "bug-triage", "reproduce")
    assert r.status_code == 403 and "is suspended" in r.json()["detail"]
    agent.post(f"/api/issues/{n}/workflow-state/suspend", json={})
    st = agent.post(f"/api/issues/{n}/workflow-state/resume", json={}).json()
    assert st["active"]["process"] == "evidence-retrieval"


def test_agent_token_is_confined_to_its_issue_and_cannot_read_the_record(api):
    issue, agent = _agent_token(api, "Why does the sync take so long?")
    other = api.post("/api/issues", json={"title": "Add a feature flag API"}).json()
    assert agent.get(f"/api/issues/{other['number']}/workflows").status_code == 403
    assert agent.post(f"/api/issues/{other['number']}/beans", json={"title": "x"}).status_code == 403
    assert agent.get("/api/workflows/record").status_code == 403
    [c] = api.get(f"/api/issues/{issue['number']}/classifications").json()
    assert c["category"] == "information_request" and agent.get(f"/api/issues/{issue['number']}/workflows").json() == []


def test_a_pending_classification_needs_a_judgement_with_a_reason(api):
    """R-HAR-2: where the table cannot decide, only a judgement with a reason classifies, and the
    category it records selects the workflow."""
    issue = api.post("/api/issues", json={"title": "Penguins"}).json()
    [c] = api.get(f"/api/issues/{issue['number']}/classifications").json()
    assert c["method"] == "pending" and c["category"] is None
    r = api.post(f"/api/issues/{issue['number']}/classifications", json={"category": "bug_report", "reason": " "})
    assert r.status_code == 422
    r = api.post(f"/api/issues/{issue['number']}/classifications",
                 json={"category": "bug_report", "reason": "the reporter says the penguin page crashes"})
    assert r.json()["method"] == "judgement" and r.json()["workflow"] == "bug-triage"
    assert [i["process_id"] for i in api.get(f"/api/issues/{issue['number']}/workflows").json()] == ["bug-triage"]
