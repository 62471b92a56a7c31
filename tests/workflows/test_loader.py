"""The loader accepts the seed's diagram style and refuses what it cannot run faithfully (R-HAR-3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictorx.workflows.library import load_library
from predictorx.workflows.loader import DiagramError

HEAD = ('<?xml version="1.0"?><bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" '
        'xmlns:h="urn:cat-harness.processes" id="d" targetNamespace="x">'
        '<bpmn:process id="p" isExecutable="false">')
TAIL = "</bpmn:process></bpmn:definitions>"


def _write(tmp_path: Path, body: str, name: str = "p.bpmn") -> Path:
    (tmp_path / name).write_text(HEAD + body + TAIL)
    return tmp_path


def test_seed_style_loads_with_lanes_roles_and_declarations(lib):
    change = lib.process("change")
    assert change.enforcement == "strict" and change.lanes == {"Agent": "agent", "Stakeholder": "stakeholder"}
    assert change.nodes["Start"].kind == "startEvent"  # the reserved id survives under its own name
    assert change.nodes["accept"].gate == "judgement" and change.nodes["size"].gate == "decision"
    assert change.nodes["draft"].skills == ["requirements"] and change.nodes["draft"].bean_op == "claim"
    assert change.nodes["implement"].capture == ["branch", "commit"]
    assert lib.process("review").lanes == {"agent": "agent", "Reviewer": "reviewer"}


@pytest.mark.parametrize("element, named", [
    ('<bpmn:scriptTask id="s1"/>', "bpmn:scriptTask (id 's1')"),
    ('<bpmn:boundaryEvent id="b1" attachedToRef="x"/>', "bpmn:boundaryEvent (id 'b1')"),
    ('<bpmn:inclusiveGateway id="ig"/>', "bpmn:inclusiveGateway (id 'ig')"),
    ('<bpmn:startEvent id="s"><bpmn:timerEventDefinition id="t"/></bpmn:startEvent>', "bpmn:timerEventDefinition"),
    ('<bpmn:task id="t"><bpmn:multiInstanceLoopCharacteristics/></bpmn:task>', "bpmn:multiInstanceLoopCharacteristics"),
    ('<bpmn:task id="t"><bpmn:extensionElements><h:teleport/></bpmn:extensionElements></bpmn:task>', "'teleport'"),
])
def test_unsupported_elements_are_refused_by_name(tmp_path, element, named):
    with pytest.raises(DiagramError) as e:
        load_library([_write(tmp_path, element)])
    assert named in str(e.value)


def test_condition_expressions_are_refused_branches_go_by_name(tmp_path):
    body = ('<bpmn:startEvent id="s"/><bpmn:task id="t"/><bpmn:exclusiveGateway id="g"/><bpmn:endEvent id="e"/>'
            '<bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="t"/><bpmn:sequenceFlow id="f1" sourceRef="t" targetRef="g"/>'
            '<bpmn:sequenceFlow id="f2" name="a" sourceRef="g" targetRef="e">'
            '<bpmn:conditionExpression>x == 1</bpmn:conditionExpression></bpmn:sequenceFlow>'
            '<bpmn:sequenceFlow id="f3" name="b" sourceRef="g" targetRef="e"/>')
    with pytest.raises(DiagramError, match="conditionExpression.*flow's name"):
        load_library([_write(tmp_path, body)])


def test_unnamed_branches_and_missing_called_process_are_refused(tmp_path):
    body = ('<bpmn:startEvent id="s"/><bpmn:task id="t"/><bpmn:exclusiveGateway id="g"/><bpmn:endEvent id="e"/>'
            '<bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="t"/><bpmn:sequenceFlow id="f1" sourceRef="t" targetRef="g"/>'
            '<bpmn:sequenceFlow id="f2" name="a" sourceRef="g" targetRef="e"/>'
            '<bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="e"/>')
    with pytest.raises(DiagramError, match="distinct name on every outgoing flow"):
        load_library([_write(tmp_path, body)])
    body = ('<bpmn:startEvent id="s"/><bpmn:callActivity id="c" calledElement="nowhere"/><bpmn:endEvent id="e"/>'
            '<bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="c"/><bpmn:sequenceFlow id="f1" sourceRef="c" targetRef="e"/>')
    with pytest.raises(DiagramError, match="calls process 'nowhere'"):
        load_library([_write(tmp_path, body)])


def test_strict_without_a_policy_and_judgement_without_reason_are_refused(tmp_path):
    body = ('<bpmn:extensionElements><h:policy enforcement="strict"/></bpmn:extensionElements>'
            '<bpmn:startEvent id="s"/><bpmn:task id="t"/><bpmn:endEvent id="e"/>'
            '<bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="t"/><bpmn:sequenceFlow id="f1" sourceRef="t" targetRef="e"/>')
    with pytest.raises(DiagramError, match="strict enforcement but no"):
        load_library([_write(tmp_path, body)])
    body = ('<bpmn:startEvent id="s"/><bpmn:task id="t"/><bpmn:exclusiveGateway id="g">'
            '<bpmn:extensionElements><h:judgement/></bpmn:extensionElements></bpmn:exclusiveGateway><bpmn:endEvent id="e"/>'
            '<bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="t"/><bpmn:sequenceFlow id="f1" sourceRef="t" targetRef="g"/>'
            '<bpmn:sequenceFlow id="f2" name="a" sourceRef="g" targetRef="e"/><bpmn:sequenceFlow id="f3" name="b" sourceRef="g" targetRef="e"/>')
    with pytest.raises(DiagramError, match="judgement without reason"):
        load_library([_write(tmp_path, body)])
