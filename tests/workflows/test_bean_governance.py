"""Issue 29 finding 6: a bean that belongs to a running workflow changes status only through that
workflow's steps, or by a person with the role — attributed and in the PROV record; an agent's task
token cannot settle it early, and `prov qaqc` reports what went around the steps (R-HAR-5, R-HAR-6).
Before the fix the agent's `resolve` and `scrap` answered 200 and left nothing in the record."""

from __future__ import annotations

from tests.api.test_redteam import _member
from tests.workflows.test_api import _agent_token, _step
from tests.workflows.test_prov_interop import assert_prov_travels

from predictorx.service import beans as bean_svc
from predictorx.store.workflow_schema import Bean
from predictorx.workflows import qaqc
from predictorx.workflows.library import SHIPPED, load_library

P = "authoring-a-paper"
WORK = {"bean": "Introduction", "branch": "agent/a1/intro", "commit": "abc1234"}


def _paper_at_plan(api, **kw):
    """An authoring-a-paper issue whose agent claimed its bean through the claim step."""
    issue, agent = _agent_token(api, "Write the introduction section of the paper", **kw)
    n = issue["number"]
    assert agent.post(f"/api/issues/{n}/beans", json={"title": "Introduction"}).json()["created"]
    assert _step(agent, n, P, "claim", produced={"bean": "Introduction"}).status_code == 200
    return n, agent


def _qaqc(api, n):
    records = api.get("/api/workflows/record", params={"issue": str(n)}).json()["records"]
    return qaqc.report(load_library([SHIPPED]), records)


def test_an_agent_cannot_resolve_or_scrap_its_workflows_bean_before_the_step(api):
    n, agent = _paper_at_plan(api)
    r = agent.post(f"/api/issues/{n}/beans/Introduction/resolve", json={})
    assert r.status_code == 403, r.text
    detail = r.json()["detail"]
    assert "belongs to workflow 'authoring-a-paper' (now at plan)" in detail
    assert "its step 'resolve' (role agent) does the resolve" in detail and "a person with role user" in detail
    r = agent.post(f"/api/issues/{n}/beans/Introduction/scrap", json={"text": "not needed"})
    assert r.status_code == 403 and "may scrap it" in r.json()["detail"]
    for _ in range(3):  # repeats are counted on one row, like refused steps
        agent.post(f"/api/issues/{n}/beans/Introduction/resolve", json={})
    bean = agent.get(f"/api/issues/{n}/beans/Introduction").json()
    assert bean["status"] == "in-progress" and bean["scrap_reason"] is None
    assert agent.post(f"/api/issues/{n}/beans/Introduction/note", json={"text": "outline done"}).status_code == 200

    hist = api.get(f"/api/issues/{n}/workflows/{P}").json()["history"]
    refused = [h for h in hist if h["kind"] == "bean"]
    assert [(h["node_id"], h["status"], h["actor_name"], h["attempts"]) for h in refused] == [
        ("bean:resolve", "refused", "a1", 4), ("bean:scrap", "refused", "a1", 1)]
    assert all(h["task_id"] for h in refused)  # the agent and its task
    rep = _qaqc(api, n)
    assert rep["counts"].get("refused") == 2 and "outside-steps" not in rep["counts"]
    assert any("agent a1 tried to resolve a bean outside the workflow's steps, 4 attempts" == f["detail"]
               for f in rep["findings"])

    # the workflow's own steps still settle it: plan, draft, validate, the user's review and acceptance, resolve
    assert _step(agent, n, P, "plan").status_code == 200
    assert _step(agent, n, P, "draft", produced=WORK).status_code == 200
    assert _step(agent, n, P, "validate").status_code == 200
    assert _step(agent, n, P, "valid", facts={"errors": 0, "warnings": 0}).status_code == 200
    assert agent.post(f"/api/issues/{n}/beans/Introduction/resolve", json={}).status_code == 403  # still before review
    assert _step(api, n, P, "review").status_code == 200
    assert _step(api, n, P, "accepted", outcome="accepted", reason="it says what I asked").status_code == 200
    assert _step(agent, n, P, "resolve", produced={"bean": "Introduction"}).status_code == 200
    bean = agent.get(f"/api/issues/{n}/beans/Introduction").json()
    assert bean["status"] == "resolved"
    assert bean["notes"][-1]["op"] == "resolve" and bean["notes"][-1]["by"].startswith("agent a1 (task ")
    assert "at workflow step resolve" in bean["notes"][-1]["by"]
    assert "outside-steps" not in _qaqc(api, n)["counts"]
    doc = api.get(f"/api/issues/{n}/workflows/{P}/prov").json()
    [resolve] = [g for g in doc["@graph"] if g.get("rdfs:label", "").startswith("Resolve the bean")
                 and g.get("@type") == "prov:Activity"]
    assert resolve["px:task"]["@id"].startswith("urn:predictorx:task:")  # who: the agent and its task
    nodes = {g["@id"]: g for g in doc["@graph"]}
    [version] = [r["@id"] for r in resolve["prov:generated"]
                 if nodes[r["@id"]].get("prov:specializationOf") == {"@id": f"urn:predictorx:bean:{bean['id']}"}]
    assert nodes[version]["prov:wasGeneratedBy"] == {"@id": resolve["@id"]}  # the bean at that step (issue 24)
    assert_prov_travels(doc)


def test_a_person_with_the_role_may_and_the_record_says_who(api):
    project = api.post("/api/projects", json={"title": "Paper"}).json()
    n, agent = _paper_at_plan(api, project_id=project["id"])
    bob = _member(api, "bob")
    # the project gives the user role to its owner alone: bob is a member without it
    assert api.post(f"/api/projects/{project['id']}/roles",
                    json={"role": "user", "kind": "member", "name": "owner"}).status_code < 300
    r = bob.post(f"/api/issues/{n}/beans/Introduction/scrap", json={"text": "bob thinks so"})
    assert r.status_code == 403 and "person bob holds" in r.json()["detail"] and "role user" in r.json()["detail"]
    r = api.post(f"/api/issues/{n}/beans/Introduction/scrap", json={"text": "the paper drops its introduction"})
    assert r.status_code == 200, r.text
    bean = r.json()
    assert bean["status"] == "scrapped" and bean["notes"][-1]["op"] == "scrap"
    assert bean["notes"][-1]["by"] == "person owner (role user, outside the steps of workflow authoring-a-paper)"

    hist = api.get(f"/api/issues/{n}/workflows/{P}").json()["history"]
    [done] = [h for h in hist if h["kind"] == "bean" and h["status"] == "done"]
    assert (done["node_id"], done["actor_type"], done["actor_name"], done["role"]) == (
        "bean:scrap", "person", "owner", "user")
    assert done["reason"] == "the paper drops its introduction" and done["produced"] == {"bean": bean["id"]}
    doc = api.get(f"/api/issues/{n}/workflows/{P}/prov").json()
    [act] = [g for g in doc["@graph"] if g.get("px:beanOp") == "scrap" and g.get("px:valid") is not False]
    [bobs] = [g for g in doc["@graph"] if g.get("px:beanOp") == "scrap" and g.get("px:valid") is False]
    assert bobs["px:status"] == "refused" and "prov:invalidated" not in bobs  # his refused attempt, in the record
    assert act["px:outsideSteps"] is True and act["prov:wasAssociatedWith"]["@id"].startswith("urn:predictorx:person:")
    assert act["prov:qualifiedAssociation"]["prov:hadRole"]["@id"] == "urn:predictorx:role:user"
    nodes = {g["@id"]: g for g in doc["@graph"]}
    [gone] = act["prov:invalidated"]  # scrapping invalidates the bean as its claim step left it (issue 24)
    assert nodes[gone["@id"]]["prov:specializationOf"] == {"@id": f"urn:predictorx:bean:{bean['id']}"}
    assert nodes[gone["@id"]]["prov:wasInvalidatedBy"] == {"@id": act["@id"]} and "prov:generated" not in act
    assert_prov_travels(doc)
    rep = _qaqc(api, n)
    assert rep["counts"].get("override") == 1 and "outside-steps" not in rep["counts"]
    [f] = [f for f in rep["findings"] if f["finding"] == "override"]
    assert f["actor"] == "owner" and f["detail"] == "person owner (role user) did the bean's scrap outside the workflow's steps"


def test_the_bean_lifecycle_scrap_is_the_stakeholders_step(api):
    issue, agent = _agent_token(api, "Some work")
    n, p = issue["number"], "bean-lifecycle"
    assert agent.post(f"/api/issues/{n}/workflows", json={"process": p}).status_code == 200
    agent.post(f"/api/issues/{n}/beans", json={"title": "Parser"})
    assert _step(agent, n, p, "create").status_code == 200
    assert _step(agent, n, p, "claim", produced={"bean": "Parser"}).status_code == 200
    r = agent.post(f"/api/issues/{n}/beans/Parser/scrap", json={"text": "too hard"})
    assert r.status_code == 403 and "its step 'scrap' (role stakeholder) does the scrap" in r.json()["detail"]
    assert _step(agent, n, p, "work", produced={"bean": "Parser", "branch": "b", "commit": "c1"}).status_code == 200
    assert _step(agent, n, p, "done", outcome="scrap", reason="superseded").status_code == 200
    r = _step(agent, n, p, "scrap", produced={"bean": "Parser"})
    assert r.status_code == 403 and "is for role stakeholder" in r.json()["detail"]
    assert _step(api, n, p, "scrap", produced={"bean": "Parser"}, reason="superseded by #7").status_code == 200
    bean = api.get(f"/api/issues/{n}/beans/Parser").json()
    assert bean["status"] == "scrapped" and bean["scrap_reason"] == "superseded by #7"
    assert bean["notes"][-1]["by"] == "person owner at workflow step scrap"
    # completed: the bean is free again, and the record has nothing around the steps
    assert "outside-steps" not in _qaqc(api, n)["counts"]


def test_another_workflow_cannot_settle_a_bean_that_belongs_to_a_running_one(api):
    n, agent = _paper_at_plan(api)
    assert agent.post(f"/api/issues/{n}/workflows", json={"process": "bean-lifecycle"}).status_code == 200
    assert _step(agent, n, "bean-lifecycle", "create").status_code == 200
    r = _step(agent, n, "bean-lifecycle", "claim", produced={"bean": "Introduction"})
    assert r.status_code == 403 and "belongs to workflow 'authoring-a-paper', which is not completed" in r.json()["detail"]


def test_a_claim_step_never_reopens_a_settled_bean(api):
    issue, agent = _agent_token(api, "Write the introduction section of the paper")
    n = issue["number"]
    agent.post(f"/api/issues/{n}/beans", json={"title": "Introduction"})
    assert agent.post(f"/api/issues/{n}/beans/Introduction/resolve", json={}).status_code == 200  # free: no workflow yet
    r = _step(agent, n, P, "claim", produced={"bean": "Introduction"})
    assert r.status_code == 403 and "is resolved; step 'claim' claims a created or in-progress bean" in r.json()["detail"]


def test_qaqc_reports_a_bean_settled_around_the_steps_in_older_data(api, db):
    n, agent = _paper_at_plan(api)
    with db.write() as s:  # what the API let an agent do before the fix: the status changed, no row recorded
        bean = s.query(Bean).filter(Bean.title == "Introduction").one()
        bean_svc.resolve(s, bean, None)
    rep = _qaqc(api, n)
    [f] = [f for f in rep["findings"] if f["finding"] == "outside-steps"]
    assert f["node"] == "bean Introduction" and f["issue"] == n
    assert "is resolved, but no step of this workflow and no person with its role did the resolve" in f["detail"]
    assert "outside-steps" in qaqc.to_markdown(rep)


def test_migration_0015_gives_older_beans_their_workflow(api, db):
    """A bean a step named before the column existed belongs to that step's instance after the upgrade."""
    from predictorx.store.migrate import downgrade, upgrade

    n, agent = _paper_at_plan(api)
    with db.read() as s:
        before = {b.title: b.instance_id for b in s.query(Bean)}
    assert before["Introduction"]
    downgrade(db.engine, "0013")
    upgrade(db.engine)
    with db.read() as s:
        assert {b.title: b.instance_id for b in s.query(Bean)} == before
    assert agent.post(f"/api/issues/{n}/beans/Introduction/resolve", json={}).status_code == 403


def test_the_task_start_sweep_says_which_workflow_holds_a_bean(api):
    from predictorx.workflowmcp.sweep_text import render

    n, agent = _paper_at_plan(api)
    agent.post(f"/api/issues/{n}/beans", json={"title": "Related work"})
    task_id = api.get(f"/api/issues/{n}/runs").json()[0]["id"]
    sw = agent.get(f"/api/tasks/{task_id}/harness/sweep").json()
    assert {b["title"]: b["workflow"] for b in sw["beans"]["open"]} == {"Introduction": P, "Related work": None}
    assert "Introduction (etag 2; workflow authoring-a-paper holds it: its steps change its status)" in render(sw)
