"""The seed's pieces issue 24 item 7 found missing: relaxable="false" policies, iteration summaries
as issue comments, the "user defers" exit of the change-request workflow (resuming the content work
it interrupted), and each agent reply saying which bean it is on and what is next."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from predictorx.workflows import qaqc
from predictorx.workflows.library import SHIPPED, load_library
from predictorx.workflows.loader import DiagramError

from .deliveries import run_delivered, sha

DIAGRAMS = Path(__file__).parent / "diagrams"
HEAD = ('<?xml version="1.0"?><bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" '
        'xmlns:h="urn:cat-harness.processes" id="d" targetNamespace="x"><bpmn:process id="p" isExecutable="false">')
FLOW = ('<bpmn:startEvent id="s"/>{task}<bpmn:endEvent id="e"/><bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="t"/>'
        '<bpmn:sequenceFlow id="f1" sourceRef="t" targetRef="e"/></bpmn:process></bpmn:definitions>')


def _lib(tmp_path: Path, relaxable: str, node_policy: str):
    shutil.copytree(DIAGRAMS / "policies", tmp_path / "policies", dirs_exist_ok=True)
    (tmp_path / "policies" / "other.jsonld").write_text(
        '{"@context": "http://www.w3.org/ns/odrl.jsonld", "@type": "Set", "uid": "urn:other", "permission": '
        '[{"action": "use"}]}')
    process = (f'<bpmn:extensionElements><h:policy enforcement="strict" relaxable="{relaxable}" '
               'ref="policies/team.jsonld"/></bpmn:extensionElements>')
    task = f'<bpmn:task id="t"><bpmn:extensionElements>{node_policy}</bpmn:extensionElements></bpmn:task>'
    (tmp_path / "p.bpmn").write_text(HEAD + process + FLOW.format(task=task))
    return load_library([tmp_path])


def test_a_relaxable_false_policy_cannot_be_relaxed_or_dropped_by_a_node(tmp_path):
    with pytest.raises(DiagramError, match=r"'t' declares advisory enforcement, but process 'p' holds policy "
                                           r"policies/team.jsonld strict and relaxable=\"false\""):
        _lib(tmp_path, "false", '<h:policy enforcement="advisory"/>')
    lib = _lib(tmp_path, "false", '<h:policy enforcement="strict" ref="policies/other.jsonld"/>')
    model = lib.process("p")
    assert model.policies_of(model.node("t")) == ["policies/other.jsonld", "policies/team.jsonld"]
    assert [p.uid for p in lib.policies_for(model, model.node("t"))][-1].endswith("team")
    relaxed = _lib(tmp_path, "true", '<h:policy enforcement="advisory" ref="policies/other.jsonld"/>')
    m = relaxed.process("p")  # relaxable (the default): the node's own policy and enforcement stand
    assert (m.policies_of(m.node("t")), m.enforcement_of(m.node("t"))) == (["policies/other.jsonld"], "advisory")
    with pytest.raises(DiagramError, match="relaxable on 'p' must be true or false"):
        _lib(tmp_path, "maybe", "")


def _agent(api, title):
    d = api.as_(api.post("/api/daemon/register", json={
        "daemon_id": str(uuid.uuid4()), "name": "h", "capabilities": [],
        "runtimes": [{"provider": "command", "version": "1"}]}).json()["token"])
    if not api.get("/api/agents").json():
        api.post("/api/agents", json={"name": "a1", "provider": "command", "command": ["true"]})
    n = api.post("/api/issues", json={"title": title, "assignee": "a1"}).json()["number"]
    claim = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    agent = api.as_(claim["token"])
    agent.daemon, agent.task_id = d, claim["task"]["id"]  # its daemon ends the run (deliveries.py)
    return n, agent


def _step(who, n, step, process="feature-request", **body):
    r = who.post(f"/api/issues/{n}/workflows/{process}/steps", json={"step": step, **body})
    assert r.status_code == 200, r.json()
    return r.json()


def _to_more(api, agent, n):
    for step, who, kw in [("capture", agent, {}), ("requirements", agent, {}), ("signoff", api, {}),
                          ("approved", api, {"outcome": "approved", "reason": "ok"}), ("plan-beans", agent, {})]:
        _step(who, n, step, **kw)
    for t in ("CSV writer", "CSV docs"):
        agent.post(f"/api/issues/{n}/beans", json={"title": t})
    # implement is a commit boundary: the run commits and ends, the next task names the delivered commit
    agent, _, commit = run_delivered(api, agent.daemon, agent.task_id, f"feat/{n}-csv", "csv")
    _step(agent, n, "implement", produced={"bean": "CSV writer", "branch": f"feat/{n}-csv", "commit": commit[:7]})
    return agent


def test_each_round_leaves_an_iteration_summary_and_each_agent_reply_its_position(api):
    n, agent = _agent(api, "Add a CSV export command to the CLI")
    agent = _to_more(api, agent, n)
    r = agent.post(f"/api/issues/{n}/comments", json={"body": "Writer done, tests green."})
    assert r.status_code == 201
    body = r.json()["body"]
    assert body.startswith("Writer done, tests green.\n\n---\nPosition: workflow `feature-request` · "
                           "bean “CSV writer” (in-progress) · next: Beans left? (`more`, agent)"), body
    _step(agent, n, "more")
    [summary] = [c["body"] for c in api.get(f"/api/issues/{n}/comments").json() if "Iteration summary" in c["body"]]
    assert "**Iteration summary** — `feature-request`, round 1" in summary, summary
    assert f"- Implement the next bean (a1): bean `CSV writer`, branch `feat/{n}-csv`, commit `{sha('csv')[:7]}`" in summary, summary
    assert "| CSV writer | created | in-progress |" in summary
    assert "Still to do: 2 open bean(s): CSV writer; CSV docs" in summary and "Next: `implement` (agent)" in summary
    people = api.post(f"/api/issues/{n}/comments", json={"body": "thanks"}).json()["body"]
    assert people == "thanks"  # a person's comment is theirs alone


def test_the_user_defers_the_remaining_work_and_the_content_work_resumes(api):
    n, agent = _agent(api, "Why does the sync take so long?")
    agent.post(f"/api/issues/{n}/workflows", json={"process": "authoring-a-paper"})
    api.post(f"/api/issues/{n}/workflows", json={"process": "feature-request"})
    api.post(f"/api/issues/{n}/workflow-state/answer", json={"answer": "suspend", "reason": "urgent"})
    agent = _to_more(api, agent, n)
    exit_ = f"/api/issues/{n}/workflows/feature-request/exit"
    assert agent.post(exit_, json={"exit": "defer", "reason": "later"}).status_code == 403  # the user's, not the agent's
    r = api.post(exit_, json={"exit": "elsewhere", "reason": "x"})
    assert r.status_code == 403 and "declares no exit 'elsewhere' (its exits: defer)" in r.json()["detail"]
    assert api.post(exit_, json={"exit": "defer"}).status_code == 422  # a reason is mandatory
    r = api.post(exit_, json={"exit": "defer", "reason": "the docs bean can wait for the next release"})
    assert r.status_code == 200, r.json()
    st = r.json()["step"]
    assert (st["kind"], st["node_id"], st["role"], st["facts"], st["fact_sources"]) == (
        "exit", "exit:defer", "stakeholder", {"open_beans": 2}, {"open_beans": "system"})
    assert r.json()["instance"]["status"] == "completed"
    state = agent.get(f"/api/issues/{n}/workflow-state").json()
    assert state["active"]["process"] == "authoring-a-paper" and state["stack"] == []  # the content work resumes
    assert {b["title"]: b["status"] for b in api.get(f"/api/issues/{n}/beans").json()} == {
        "CSV writer": "in-progress", "CSV docs": "created"}  # deferred, not lost
    assert api.post(exit_, json={"exit": "defer", "reason": "again"}).status_code == 403
    rec = api.get("/api/workflows/record", params={"issue": n}).json()["records"]
    rep = qaqc.report(load_library([SHIPPED]), rec)
    nodes = {s["node_id"] for r in rec for s in r["steps"]}
    assert {"exit:defer", "switch:feature-request"} <= nodes
    assert [f for f in rep["findings"] if f["node"] in ("exit:defer", "switch:feature-request")] == []
    doc = api.get(f"/api/issues/{n}/workflows/authoring-a-paper/prov").json()
    assert any("px:sessionQuestion" in node for node in doc["@graph"])
