"""DMN details of issue 24 (items 8 and 9): FEEL string escapes and `.5` numbers in cells, a table
no rule of which matches answers null, and a decision ref says why it does not resolve — a table
sharing its file with a decision outside the subset loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from predictorx.program import main
from predictorx.workflows.dmn import CellError, load_dmn, parse_literal, parse_unary_tests
from predictorx.workflows.engine import Actor, Run, StepRefused
from predictorx.workflows.library import load_library


@pytest.mark.parametrize("cell, yes, no", [
    (r'"a\nb"', ["a\nb"], ["anb", "a\\nb", "ab"]),
    (r'"a\u0041"', ["aA"], ["au0041", "a\\u0041"]),
    (r'"\t\r\"\\\'"', ["\t\r\"\\'"], ["trx"]),
    (r'"\U01F600"', ["\U0001F600"], ["U01F600"]),
    (r'"\ud83d\ude00"', ["\U0001F600"], ["\ud83d\ude00"]),   # a surrogate pair is one character
    (r'"x\u00e9", "y"', ["xé", "y"], ["x\\u00e9"]),
    (r'not("a\nb")', ["ab"], ["a\nb"]),
    (r'["a\u0041".."a\u0043"]', ["aB"], ["aD"]),
    (".5", [0.5], [5, 0.05]),
    ("-.5", [-0.5], [0.5]),
    ("< .5", [0.25, 0], [0.5, 1]),
    ("[.25..0.75]", [0.25, 0.5], [0.2, 0.8]),
])
def test_cells_read_strings_and_numbers_as_feel_writes_them(cell, yes, no):
    test = parse_unary_tests(cell)
    assert all(test(v) for v in yes) and not any(test(v) for v in no)


def test_literals_and_bad_escapes():
    assert parse_literal(r'"a\u0041\n"') == "aA\n" and parse_literal(".5") == 0.5
    for cell in (r'"\q"', r'"\u00"', r'"\ud83d"', r'"\U110000"'):
        with pytest.raises(CellError):
            parse_unary_tests(cell)


GATE = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:h="urn:cat-harness.processes"
    id="d" targetNamespace="x">
  <bpmn:process id="pick" isExecutable="false">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <bpmn:task id="t" name="Look"/>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="g"/>
    <bpmn:exclusiveGateway id="g" name="Which?">
      <bpmn:extensionElements><h:decision ref="REF"/></bpmn:extensionElements>
    </bpmn:exclusiveGateway>
    <bpmn:sequenceFlow id="fa" name="a" sourceRef="g" targetRef="e1"/>
    <bpmn:sequenceFlow id="fb" name="b" sourceRef="g" targetRef="e2"/>
    <bpmn:endEvent id="e1"/>
    <bpmn:endEvent id="e2"/>
  </bpmn:process>
</bpmn:definitions>
"""

# `tbl` is a table of the subset; `lit` is a literal expression, outside it. Before issue 24 the
# whole file failed to load and a ref to `tbl` "resolved to nothing".
MIXED = r"""<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" id="m" name="mixed" namespace="x">
  <decision id="tbl" name="Pick">
    <decisionTable id="t" hitPolicy="UNIQUE">
      <input id="i"><inputExpression id="ie" typeRef="string"><text>s</text></inputExpression></input>
      <output id="o" name="route" typeRef="string"/>
      <rule id="r1"><inputEntry><text>"line\none"</text></inputEntry><outputEntry><text>"a"</text></outputEntry></rule>
      <rule id="r2"><inputEntry><text>"\u0041BC"</text></inputEntry><outputEntry><text>"b"</text></outputEntry></rule>
    </decisionTable>
  </decision>
  <decision id="lit" name="Literal">
    <literalExpression><text>"a" + "b"</text></literalExpression>
  </decision>
</definitions>
"""


def _folder(tmp_path: Path, ref: str, dmn: dict[str, str]) -> Path:
    folder = tmp_path / ref.replace("#", "_").replace(".", "_")
    folder.mkdir()
    (folder / "pick.bpmn").write_text(GATE.replace("REF", ref))
    for name, text in dmn.items():
        (folder / name).write_text(text)
    return folder


def _refs(capsys, folder: Path) -> dict:
    with pytest.raises(SystemExit):
        main(["check", "workflow-refs", "--json", str(folder)])
    return json.loads(capsys.readouterr().out)


def test_a_table_beside_a_decision_it_cannot_load_loads_and_decides(tmp_path, capsys):
    tables = (tmp_path / "m.dmn")
    tables.write_text(MIXED)
    loaded = load_dmn(tables)
    assert loaded["tbl"].problems == [] and loaded["tbl"].result({"s": "ABC"}) == "b"
    assert loaded["lit"].unloadable and "needs exactly one decisionTable" in loaded["lit"].problems[0]
    folder = _folder(tmp_path, "mixed.dmn#tbl", {"mixed.dmn": MIXED})
    assert _refs(capsys, folder)["errors"] == []
    lib = load_library([folder])
    who = Actor("person", "u", "ann", frozenset())
    for value, branch in (("line\none", "a"), ("ABC", "b")):
        run = Run.start(lib, "pick")
        run.apply(run.prepare(run.find("t", who)))
        passage = run.prepare(run.find("g", who), facts={"s": value})
        assert passage.outcome == branch and passage.computed
    run = Run.start(lib, "pick")
    run.apply(run.prepare(run.find("t", who)))
    with pytest.raises(StepRefused, match=r"gate 'g': no rule of decision 'tbl' matches s='line\\\\none': the "
                                          r"decision is null, so no branch can be taken"):
        run.prepare(run.find("g", who), facts={"s": "line\\none"})  # a backslash and n: not the newline


@pytest.mark.parametrize("ref, files, reason", [
    ("mixed.dmn#lit", {"mixed.dmn": MIXED},
     "decision mixed.dmn#lit: decision 'lit' in mixed.dmn needs exactly one decisionTable"),
    ("mixed.dmn#nope", {"mixed.dmn": MIXED},
     "decision ref mixed.dmn#nope resolves to nothing: mixed.dmn has no decision 'nope' (its decisions: lit, tbl)"),
    ("gone.dmn#tbl", {}, "decision ref gone.dmn#tbl resolves to nothing: gone.dmn does not exist beside the diagram"),
    ("bad.dmn#tbl", {"bad.dmn": "<definitions"}, "decision ref bad.dmn#tbl resolves to nothing: bad.dmn is not "
                                                 "readable DMN XML"),
])
def test_check_workflow_refs_says_why_a_decision_ref_does_not_resolve(tmp_path, capsys, ref, files, reason):
    out = _refs(capsys, _folder(tmp_path, ref, files))
    assert not out["ok"] and any(f"pick.bpmn#g: {reason}" in e for e in out["errors"]), out["errors"]
