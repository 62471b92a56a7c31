"""The seed's content workflows over HTTP (R-HAR-2, R-HAR-8): a content-authoring issue classifies
into the authoring workflow of its folio (the folio table, or a judgement that names the folio),
the agent works the agent lane with the content tracked as a bean, the user's review and
acceptance are refused to the agent, and the bean resolves when the workflow completes; in the
content lifecycle a strict policy keeps publishing from an agent even when it holds the user role."""

from __future__ import annotations

from tests.workflows.test_api import _agent_token, _step

from predictorx.workflows import qaqc
from predictorx.workflows.library import SHIPPED, load_library

WORK = {"bean": "Introduction", "branch": "agent/a1/intro", "commit": "abc1234"}


def test_a_paper_request_runs_authoring_a_paper_to_completion(api):
    issue, agent = _agent_token(api, "Write the introduction section of the paper")
    n, p = issue["number"], "authoring-a-paper"
    [c] = api.get(f"/api/issues/{n}/classifications").json()
    assert (c["category"], c["method"], c["rule"], c["workflow"]) == ("content_authoring", "table",
                                                                    "en.author.verb-first+en.author.verb+"
                                                                    "en.author.content-noun/paper", p)
    [inst] = agent.get(f"/api/issues/{n}/workflows").json()
    assert inst["process_id"] == p and [e["node"] for e in inst["enabled"]] == ["claim"]
    assert agent.get(f"/api/issues/{n}/workflow-state").json()["active"]["process"] == p
    r = _step(agent, n, p, "claim", produced={"bean": "Introduction"})
    assert r.status_code == 403 and "has no bean 'Introduction'" in r.json()["detail"]  # the agent creates it first
    assert agent.post(f"/api/issues/{n}/beans", json={"title": "Introduction"}).json()["created"]
    assert _step(agent, n, p, "claim", produced={"bean": "Introduction"}).status_code == 200
    assert agent.get(f"/api/issues/{n}/beans/Introduction").json()["status"] == "in-progress"
    assert _step(agent, n, p, "plan").status_code == 200
    assert _step(agent, n, p, "draft", produced=WORK).status_code == 200
    assert _step(agent, n, p, "validate").status_code == 200
    r = _step(agent, n, p, "valid", outcome="valid")
    assert r.status_code == 403 and "passed by hand is refused" in r.json()["detail"]
    r = _step(agent, n, p, "valid", facts={"errors": 0, "warnings": 2})
    assert r.json()["step"]["outcome"] == "valid" and r.json()["step"]["computed"]
    r = _step(agent, n, p, "review")
    assert r.status_code == 403 and "is for role user; agent a1 holds agent" in r.json()["detail"]
    assert _step(api, n, p, "review").status_code == 200  # the owner is among the workspace's people
    r = _step(api, n, p, "accepted", outcome="accepted")
    assert r.status_code == 403 and "needs a reason" in r.json()["detail"]
    assert _step(api, n, p, "accepted", outcome="accepted", reason="it says what I asked").status_code == 200
    assert _step(agent, n, p, "resolve", produced={"bean": "Introduction"}).status_code == 200
    shown = api.get(f"/api/issues/{n}/workflows/{p}").json()
    assert shown["status"] == "completed" and shown["enabled"] == []
    assert [h["node_id"] for h in shown["history"] if h["status"] == "done"] == [
        "claim", "plan", "draft", "validate", "valid", "review", "accepted", "resolve"]
    assert agent.get(f"/api/issues/{n}/beans/Introduction").json()["status"] == "resolved"


def test_when_the_folio_table_cannot_decide_a_judgement_names_the_folio(api):
    issue = api.post("/api/issues", json={"title": "Draft a section on pricing"}).json()
    n = issue["number"]
    [c] = api.get(f"/api/issues/{n}/classifications").json()
    assert (c["category"], c["method"], c["workflow"]) == ("content_authoring", "pending", None)
    assert "cannot decide paper or document" in c["reason"]
    assert api.get(f"/api/issues/{n}/workflows").json() == []  # nothing starts silently
    r = api.post(f"/api/issues/{n}/classifications", json={"category": "content_authoring", "reason": "user said"})
    assert r.status_code == 422 and "folio paper (authoring-a-paper) or document" in r.json()["detail"]
    r = api.post(f"/api/issues/{n}/classifications",
                 json={"category": "bug_report", "reason": "x", "folio": "paper"})
    assert r.status_code == 422 and "only for content authoring" in r.json()["detail"]
    r = api.post(f"/api/issues/{n}/classifications", json={"category": "content_authoring", "folio": "document",
                                                           "reason": "the pricing section goes in the user guide"})
    assert r.status_code == 200
    assert (r.json()["method"], r.json()["workflow"]) == ("judgement", "authoring-a-document")
    assert [i["process_id"] for i in api.get(f"/api/issues/{n}/workflows").json()] == ["authoring-a-document"]
    [c] = api.get(f"/api/issues/{n}/classifications").json()
    assert (c["workflow"], c["reason"]) == ("authoring-a-document", "the pricing section goes in the user guide")


def test_content_lifecycle_publish_is_strict_even_for_an_agent_holding_the_user_role(api):
    project = api.post("/api/projects", json={"title": "p"}).json()
    issue, agent = _agent_token(api, "Please review my draft chapter", project_id=project["id"])
    n, p = issue["number"], "content-lifecycle"
    [c] = api.get(f"/api/issues/{n}/classifications").json()
    assert (c["category"], c["workflow"]) == ("content_review", p)
    agent.post(f"/api/issues/{n}/beans", json={"title": "Introduction"})
    assert _step(agent, n, p, "claim", produced={"bean": "Introduction"}).status_code == 200
    assert _step(agent, n, p, "validate").status_code == 200
    assert _step(agent, n, p, "valid", facts={"errors": 0}).json()["step"]["outcome"] == "valid"
    assert _step(agent, n, p, "render", produced={"commit": "abc1234"}).status_code == 200
    assert _step(agent, n, p, "qa").status_code == 200
    assert _step(agent, n, p, "qa-gate", facts={"errors": 0, "warnings": 0}).json()["step"]["outcome"] == "publish"
    assert _step(api, n, p, "review").status_code == 200
    assert _step(api, n, p, "approved", outcome="publish", reason="reads well").status_code == 200
    # bound to the user role, the agent holds the lane's role — and the content policy still forbids it
    r = api.post(f"/api/projects/{project['id']}/roles", json={"role": "user", "kind": "agent", "name": "a1"})
    assert r.status_code == 201
    r = _step(agent, n, p, "publish")
    assert r.status_code == 403 and "under strict policy and denied by https://predictorx.dev/policies/content" \
        in r.json()["detail"]
    rec = api.get("/api/workflows/record", params={"issue": n}).json()["records"]
    rep = qaqc.report(load_library([SHIPPED]), rec)
    assert [(f["node"], f["finding"]) for f in rep["findings"]] == [("publish", "refused")]
