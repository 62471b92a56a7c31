"""The shipped workflows load, run in the engine and pass `check workflow-refs --strict` (R-HAR-8);
the check reports the three-way split and dangling refs (R-HAR-4)."""

from __future__ import annotations

import json

import pytest

from predictorx.program import main
from predictorx.workflows.engine import Run
from predictorx.workflows.library import SHIPPED, load_library

PROCESSES = ["feature-request", "bug-triage", "information-request", "document-ingestion", "evidence-retrieval",
             "draft-to-publication", "bean-lifecycle", "agentic-harness", "authoring-a-paper", "authoring-a-document",
             "content-lifecycle"]


def test_every_shipped_process_starts_in_the_engine():
    lib = load_library([SHIPPED])
    assert sorted(lib.processes) == sorted(PROCESSES)
    for pid in PROCESSES:
        assert Run.start(lib, pid).enabled(), pid


def test_shipped_processes_pass_strict_check(capsys):
    with pytest.raises(SystemExit) as e:
        main(["check", "workflow-refs", "--strict", "--json", str(SHIPPED)])
    out = json.loads(capsys.readouterr().out)
    assert e.value.code == 0 and out["ok"] and out["errors"] == []
    fr = out["diagrams"]["feature-request.bpmn"]
    assert (fr["computed"], fr["judgement"], fr["undeclared"]) == (1, 2, 0)


def test_dangling_refs_and_uncovered_activities_are_errors(capsys, tmp_path):
    from tests.workflows.conftest import DIAGRAMS

    with pytest.raises(SystemExit) as e:
        main(["check", "workflow-refs", str(DIAGRAMS)])
    text = capsys.readouterr().out
    assert e.value.code == 1 and "skill 'requirements' has no skills/requirements.md" in text
    assert "change.bpmn: 2 deciding gateways — computed 1, judgement 1, undeclared 0" in text
    assert "uncovered activity" not in text
    with pytest.raises(SystemExit):
        main(["check", "workflow-refs", "--strict", str(DIAGRAMS)])
    assert "change.bpmn#implement: uncovered activity" in capsys.readouterr().out
    bad = tmp_path / "bad.bpmn"
    bad.write_text((DIAGRAMS / "change.bpmn").read_text().replace("size.dmn#size", "size.dmn#nope"))
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "team.jsonld").write_text((DIAGRAMS / "policies" / "team.jsonld").read_text())
    with pytest.raises(SystemExit):
        main(["check", "workflow-refs", str(bad)])
    assert "decision ref size.dmn#nope resolves to nothing" in capsys.readouterr().out
