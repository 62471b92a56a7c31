"""A bounded engine (issue 24 item 2): recursive call activities are refused by the loader and
reported by `check workflow-refs`, naming the cycle; every advance runs under a step and time
budget and fails the instance with a sentence instead of hanging the request."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from predictorx.program import main
from tests.workflows.test_api import _agent_token
from predictorx.workflows import qaqc
from predictorx.workflows.engine import Actor, Budget, EngineOverrun, Run
from predictorx.workflows.library import load_library
from predictorx.workflows.loader import DiagramError

HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n<bpmn:definitions '
        'xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="x">\n')


def _write(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(HEAD + body + "\n</bpmn:definitions>\n")
    return folder


# The shape of SpiffWorkflow's tests/SpiffWorkflow/bpmn/data/call_activity_nested/call_activity_level_3.bpmn:
# process Level3 is start → call activity (calledElement="Level3") → end.
SELF_CALL = """  <bpmn:process id="Level3" name="Level3" isExecutable="true">
    <bpmn:startEvent id="StartEvent_1"/>
    <bpmn:sequenceFlow id="Flow_1g3dpd7" sourceRef="StartEvent_1" targetRef="Activity_12zat0d"/>
    <bpmn:callActivity id="Activity_12zat0d" name="call level 3" calledElement="Level3"/>
    <bpmn:sequenceFlow id="Flow_0qdgvah" sourceRef="Activity_12zat0d" targetRef="Event_18dla68"/>
    <bpmn:endEvent id="Event_18dla68"/>
  </bpmn:process>"""


def _caller(pid: str, call_id: str, called: str) -> str:
    return f"""  <bpmn:process id="{pid}" isExecutable="false">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <bpmn:task id="work" name="Work"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="{call_id}"/>
    <bpmn:callActivity id="{call_id}" calledElement="{called}"/>
    <bpmn:sequenceFlow id="f3" sourceRef="{call_id}" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>"""


# A loop of gateways with no task in it: the loader has no reason to refuse it, the engine would
# go round it for ever after `work`.
SPIN = """  <bpmn:process id="spin" isExecutable="false">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <bpmn:task id="work" name="Work"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="a"/>
    <bpmn:exclusiveGateway id="a"/>
    <bpmn:sequenceFlow id="f3" sourceRef="a" targetRef="b"/>
    <bpmn:exclusiveGateway id="b"/>
    <bpmn:sequenceFlow id="f4" sourceRef="b" targetRef="a"/>
  </bpmn:process>"""

SELF_SENTENCE = "recursive call activity: process 'Level3' calls itself (selfcall.bpmn#Activity_12zat0d)"
CYCLE_SENTENCE = "recursive call activities: a (a.bpmn#call_b) → b (b.bpmn#call_a) → a"


def test_the_loader_refuses_a_process_that_calls_itself(tmp_path):
    folder = _write(tmp_path / "self", "selfcall.bpmn", SELF_CALL)
    with pytest.raises(DiagramError, match=SELF_SENTENCE.replace("(", r"\(").replace(")", r"\)")):
        load_library([folder])


def test_the_loader_refuses_a_cycle_through_two_files_and_names_it(tmp_path):
    folder = tmp_path / "two"
    _write(folder, "a.bpmn", _caller("a", "call_b", "b"))
    _write(folder, "b.bpmn", _caller("b", "call_a", "a"))
    with pytest.raises(DiagramError) as e:
        load_library([folder])
    assert CYCLE_SENTENCE in str(e.value)
    # a chain that is no cycle still loads
    _write(folder, "b.bpmn", _caller("b", "call_c", "c"))
    _write(folder, "c.bpmn", _caller("c", "call_none", "a").replace('calledElement="a"', 'calledElement="none"'))
    with pytest.raises(DiagramError, match="calls process 'none', which no loaded diagram defines"):
        load_library([folder])


def test_check_workflow_refs_reports_the_cycles(capsys, tmp_path):
    _write(tmp_path / "both", "selfcall.bpmn", SELF_CALL)
    _write(tmp_path / "both", "a.bpmn", _caller("a", "call_b", "b"))
    _write(tmp_path / "both", "b.bpmn", _caller("b", "call_a", "a"))
    with pytest.raises(SystemExit) as e:
        main(["check", "workflow-refs", "--json", str(tmp_path / "both")])
    out = json.loads(capsys.readouterr().out)
    assert e.value.code == 1 and not out["ok"]
    assert sum(CYCLE_SENTENCE in err for err in out["errors"]) == 1  # each cycle once, from its first process
    assert sum(SELF_SENTENCE in err for err in out["errors"]) == 1


def test_an_advance_past_its_budget_fails_with_a_sentence(tmp_path):
    lib = load_library([_write(tmp_path / "spin", "spin.bpmn", SPIN)])
    run = Run.start(lib, "spin", budget=Budget(steps=200, seconds=60))
    [step] = run.enabled()
    who = Actor("person", "u", "ann", frozenset({"anyone"}))
    with pytest.raises(EngineOverrun) as e:
        run.apply(run.prepare(run.find("work", who)))
    assert "ran 200 of its own steps" in str(e.value) and "budget 200 steps" in str(e.value)
    assert "spin#a" in str(e.value) and "spin#b" in str(e.value)
    run = Run.start(lib, "spin", budget=Budget(steps=10**9, seconds=0.2))  # the clock bounds it too
    with pytest.raises(EngineOverrun, match=r"budget 1000000000 steps, 0\.2 s"):
        run.apply(run.prepare(run.find("work", who)))


def test_a_start_that_overruns_is_refused(tmp_path):
    body = SPIN.replace('targetRef="work"/>\n    <bpmn:task id="work" name="Work"/>\n', 'targetRef="a"/>\n')
    body = body.replace('<bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="a"/>\n', "")
    lib = load_library([_write(tmp_path / "spin0", "spin.bpmn", body)])
    with pytest.raises(EngineOverrun, match="process 'spin' is going round"):
        Run.start(lib, "spin", budget=Budget(steps=100, seconds=60))


def test_the_api_fails_the_instance_and_answers_instead_of_hanging(api, tmp_path, monkeypatch):
    monkeypatch.setenv("PREDICTORX_PROCESSES", str(_write(tmp_path / "procs", "spin.bpmn", SPIN)))
    issue, agent = _agent_token(api, "spin round")
    n = issue["number"]
    r = agent.post(f"/api/issues/{n}/workflows", json={"process": "spin"})
    assert r.status_code == 200 and [e["node"] for e in r.json()["enabled"]] == ["work"], r.text
    assert agent.get(f"/api/issues/{n}/workflow-state").json()["active"]["process"] == "spin"
    r = agent.post(f"/api/issues/{n}/workflows/spin/steps", json={"step": "work"})
    assert r.status_code == 409, r.text
    detail = r.json()["detail"]
    assert re.match(r"step 'work' \(Work, any role\) set the engine off and the engine ran \d+ of its own steps "
                    r"in [\d.]+ s without reaching a task for a lane \(budget 2000 steps, 5 s\); process 'spin' "
                    r"is going round spin#\w, spin#\w: a loop with no task in it", detail), detail
    assert detail.endswith("instance 'spin' is failed")
    shown = api.get(f"/api/issues/{n}/workflows/spin").json()
    assert shown["status"] == "failed" and shown["enabled"] == []
    [row] = shown["history"]
    assert (row["node_id"], row["status"], row["reason"]) == ("work", "failed", detail)
    assert agent.get(f"/api/issues/{n}/workflow-state").json()["state"] == "idle"  # its session moved on
    r = agent.post(f"/api/issues/{n}/workflows/spin/steps", json={"step": "work"})
    assert r.status_code == 403 and "failed" in r.json()["detail"]
    rep = api.get("/api/workflows/record", params={"issue": str(n)}).json()
    assert rep["records"][0]["steps"][0]["status"] == "failed"
    found = qaqc.report(load_library([tmp_path / "procs"]), rep["records"])["findings"]
    assert [(f["finding"], f["detail"]) for f in found] == [("failed", detail)]
