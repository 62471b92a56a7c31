"""The Workflows panel's own actions (issue 26 §7): a person starts a workflow of the library and
stops a running one with a reason (the API's use cases, the record keeps who and why); a workflow
the classifier started is announced with its stop; a step is offered only to whom the completion
would not refuse — the same checks `complete` makes (role, strict policy)."""

from __future__ import annotations

import uuid

import pytest
from starlette.testclient import TestClient

from predictorx.server.app import create_app
from predictorx.server.run import bootstrap
from predictorx.service import issues as issue_svc
from predictorx.service import workflow_instances as inst_svc
from predictorx.service import workflow_offers
from predictorx.service import workflow_record as record_svc
from predictorx.workflows import qaqc
from predictorx.workflows.engine import Actor
from predictorx.workflows.library import active_library

HX = {"HX-Request": "true"}


@pytest.fixture
def web(db):
    token = bootstrap(db, "http://testserver")
    with TestClient(create_app(db, migrate=False), follow_redirects=False,
                    headers={"Origin": "http://testserver"}) as c:
        c.cookies.set("px_token", token)
        c.bearer = {"Authorization": f"Bearer {token}"}
        yield c


def _panel(c, n: int) -> str:
    r = c.get(f"/issues/{n}/workflows", headers=HX)
    assert r.status_code == 200
    return r.text


def _section(panel: str, process: str) -> str:
    start = panel.index(f'<section class="workflow" data-process="{process}"')
    return panel[start:panel.index("</section>", start)]


def test_a_person_starts_and_stops_a_workflow_from_the_panel(web, db):
    n = web.post("/api/issues", json={"title": "Penguins"}, headers=web.bearer).json()["number"]
    panel = _panel(web, n)
    assert 'aria-label="Start a workflow"' in panel and '<option value="information-request">' in panel
    r = web.post(f"/issues/{n}/workflows", data={"process": "information-request"}, headers=HX)
    assert r.status_code == 200 and 'data-process="information-request"' in r.text
    assert '<option value="information-request">' not in r.text  # on the issue already: not offered again
    [inst] = web.get(f"/api/issues/{n}/workflows", headers=web.bearer).json()
    assert inst["process_id"] == "information-request" and inst["status"] == "running"
    unknown = web.post(f"/issues/{n}/workflows", data={"process": "no-such-process"}, headers=HX)
    assert unknown.status_code == 404 and 'role="alert"' in unknown.text
    assert web.post(f"/issues/{n}/workflows", data={}, headers=HX).status_code == 422

    empty = web.post(f"/issues/{n}/workflows/information-request/stop", data={"reason": " "}, headers=HX)
    assert empty.status_code == 422 and "needs a reason" in empty.text
    r = web.post(f"/issues/{n}/workflows/information-request/stop", data={"reason": "asked by mistake"}, headers=HX)
    assert r.status_code == 200
    section = _section(r.text, "information-request")
    assert "stopped" in section and "asked by mistake" in section and "Stop workflow" not in section
    shown = web.get(f"/api/issues/{n}/workflows/information-request", headers=web.bearer).json()
    assert shown["status"] == "stopped" and shown["enabled"] == []
    last = shown["history"][-1]
    assert (last["kind"], last["outcome"], last["reason"], last["actor_type"]) == (
        "stop", "stopped", "asked by mistake", "person")
    again = web.post(f"/issues/{n}/workflows/information-request/stop", data={"reason": "twice"}, headers=HX)
    assert again.status_code == 409 and "only a running one" in again.text
    ws = web.get("/api/workspaces", headers=web.bearer).json()[0]["id"]
    with db.read() as s:  # the record's check reads a stop like a session answer: nothing to report
        issue_id = issue_svc.get_issue(s, ws, str(n)).id
        records = record_svc.page(s, ws, issue_id, None, 100)["records"]
    assert not qaqc.report(active_library(), records)["findings"]


def test_an_automatically_started_workflow_is_announced_with_a_way_to_stop_it(web):
    n = web.post("/api/issues", json={"title": "The export crashes on empty files"},
                 headers=web.bearer).json()["number"]
    panel = _panel(web, n)
    section = _section(panel, "bug-triage")
    assert "Started automatically" in section and "a bug report" in section
    assert 'aria-label="Stop Bug triage: small fix or redesign"' in section
    line = panel[panel.index('class="small classification"'):]
    line = line[:line.index("</p>")]
    assert "Classified as <strong>a bug report</strong>" in line and "bug_report" not in line.split(">", 1)[1]
    r = web.post(f"/api/issues/{n}/workflows/bug-triage/stop", json={"reason": "not a bug"}, headers=web.bearer)
    assert r.status_code == 200 and r.json()["instance"]["status"] == "stopped"
    assert "Started automatically" not in _section(_panel(web, n), "bug-triage")
    refused = web.post(f"/api/issues/{n}/workflows/bug-triage/steps", json={"step": "reproduce"}, headers=web.bearer)
    assert refused.status_code == 403 and "stopped" in refused.json()["detail"]


def _agent_on(web, title: str, project_id: str) -> tuple[int, dict, str]:
    daemon = web.post("/api/daemon/register", headers=web.bearer, json={
        "daemon_id": str(uuid.uuid4()), "name": "h", "runtimes": [{"provider": "command", "version": "1"}]}).json()
    agent = web.post("/api/agents", headers=web.bearer,
                     json={"name": "a1", "provider": "command", "command": ["true"]}).json()
    n = web.post("/api/issues", headers=web.bearer,
                 json={"title": title, "assignee": "a1", "project_id": project_id}).json()["number"]
    claim = web.post("/api/daemon/claim", headers={"Authorization": f"Bearer {daemon['token']}"},
                     json={"limit": 1}).json()["tasks"][0]
    return n, agent, claim["token"]


def test_a_step_is_offered_only_to_whom_the_completion_would_not_refuse(web, db):
    project = web.post("/api/projects", json={"title": "p"}, headers=web.bearer).json()
    n, agent, task_token = _agent_on(web, "Add support for Excel uploads to the platform", project["id"])
    as_agent = {"Authorization": f"Bearer {task_token}"}
    for node in ("capture", "requirements"):
        assert web.post(f"/api/issues/{n}/workflows/feature-request/steps", json={"step": node},
                        headers=as_agent).status_code == 200
    section = _section(_panel(web, n), "feature-request")
    assert "Complete step signoff" in section  # the owner holds the stakeholder role by default

    # bound to an agent, the stakeholder role is no longer the people's: no button for the owner
    assert web.post(f"/api/projects/{project['id']}/roles", headers=web.bearer,
                    json={"role": "stakeholder", "kind": "agent", "name": "a1"}).status_code == 201
    section = _section(_panel(web, n), "feature-request")
    assert "Complete step signoff" not in section and "Waiting for stakeholder" in section
    refused = web.post(f"/api/issues/{n}/workflows/feature-request/steps", json={"step": "signoff"},
                       headers=web.bearer)
    assert refused.status_code == 403

    # the agent holds the role now, and the strict team policy still forbids it: the offer says so
    # with the very sentence the completion refuses with
    ws = web.get("/api/workspaces", headers=web.bearer).json()[0]["id"]
    lib = active_library()
    with db.read() as s:
        issue = issue_svc.get_issue(s, ws, str(n))
        inst = inst_svc.get_instance(s, issue, "feature-request")
        roles = inst_svc.actor_roles(s, lib, issue, "agent", agent["id"])
        why = workflow_offers.refusal(s, lib, issue, inst, Actor("agent", agent["id"], "a1", roles), "signoff")
    assert "stakeholder" in roles and why and "under strict policy" in why
    taken = web.post(f"/api/issues/{n}/workflows/feature-request/steps", json={"step": "signoff"}, headers=as_agent)
    assert taken.status_code == 403 and taken.json()["detail"].startswith(why)

    # a person bound to the role gets the button back, and the step is theirs
    assert web.post(f"/api/projects/{project['id']}/roles", headers=web.bearer,
                    json={"role": "stakeholder", "kind": "member", "name": "owner"}).status_code == 201
    section = _section(_panel(web, n), "feature-request")
    assert "Complete step signoff" in section
    done = web.post(f"/issues/{n}/workflows/feature-request/steps", data={"step": "signoff"}, headers=HX)
    assert done.status_code == 200 and 'data-node="approved"' in done.text
