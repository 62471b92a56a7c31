"""The BPMN workflows the seed names ship as examples (R-HAR-8), including the bean lifecycle and
the harness's own idle/workflow state machine, and each of the seed's three content workflows —
authoring in a paper folio, authoring in a document folio, the content lifecycle (validate →
render → publish) — runs through the engine to completion: agent-lane steps by the agent,
people-lane steps refused to the agent and taken by the user, validation gateways computed from
facts (a hand-passed outcome refused), acceptance a judgement with a reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from predictorx.workflows.engine import Actor, Run, StepRefused
from predictorx.workflows.library import SHIPPED, load_library

# Seed 003's workflow table, as shipped: the CRDM requirements workflow ships as feature-request.
SHIPPING = ["authoring-a-paper", "authoring-a-document", "content-lifecycle", "document-ingestion",
            "draft-to-publication", "evidence-retrieval", "feature-request", "bean-lifecycle", "agentic-harness"]
SEED_DIAGRAMS = {"authoring-a-paper": "authoring-a-paper.bpmn", "authoring-a-document": "authoring-a-document.bpmn",
                 "content-lifecycle": "content-lifecycle.bpmn"}
AGENT = Actor("agent", "a-1", "bot", frozenset({"agent"}))
USER = Actor("person", "u-1", "ann", frozenset({"user"}))


@pytest.fixture(scope="module")
def shipped():
    return load_library([SHIPPED])


def test_the_seeds_workflows_and_the_two_it_lists_as_missing_ship(shipped):
    for pid in SHIPPING:
        assert pid in shipped.processes and Run.start(shipped, pid).enabled(), pid
    harness = shipped.processes["agentic-harness"]
    assert {"idle", "route"} <= set(harness.nodes)  # the idle state and the classification routing


def test_the_seeds_authoring_and_content_lifecycle_workflows_ship(shipped):
    for pid, diagram in SEED_DIAGRAMS.items():
        model = shipped.processes[pid]
        assert model.diagram == diagram
        assert set(model.lanes.values()) == {"agent", "user"}  # the seed: a lane for the agent, one for the user
        assert {n.skills[0] for n in model.nodes.values() if n.is_task} >= {"bean-coordination", "content-validate"}
    assert "authoring-math" in {s for n in shipped.processes["authoring-a-paper"].nodes.values() for s in n.skills}
    assert "folio-document-adapter" in {s for n in shipped.processes["authoring-a-document"].nodes.values()
                                        for s in n.skills}


def test_the_docs_list_of_shipped_workflows_is_true(shipped):
    doc = (Path(__file__).parents[2] / "docs" / "workflows.md").read_text()
    table = doc.split("## Shipped workflows", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"^\| `([\w-]+)` \|", table, re.M)) == set(shipped.processes)


def _take(run: Run, ref: str, actor: Actor, **kw) -> list[str]:
    step = run.find(ref, actor)
    run.apply(run.prepare(step, **kw))
    return [s.node_id for s in run.enabled()]


def _refused(run: Run, ref: str, actor: Actor, match: str, **kw) -> None:
    state = run.dump()
    with pytest.raises(StepRefused, match=match):
        run.prepare(run.find(ref, actor), **kw)
    assert run.dump() == state  # nothing changed


BEAN = {"bean": "Intro section"}
WORK = {"bean": "Intro section", "branch": "agent/intro", "commit": "abc123"}


@pytest.mark.parametrize("pid", ["authoring-a-paper", "authoring-a-document"])
def test_authoring_runs_to_completion_with_lanes_a_computed_check_and_a_judgement(shipped, pid):
    run = Run.start(shipped, pid)
    assert [s.node_id for s in run.enabled()] == ["claim"]
    _refused(run, "claim", USER, "is for role agent; person ann holds user")
    assert _take(run, "claim", AGENT, produced=BEAN) == ["plan"]
    assert _take(run, "plan", AGENT) == ["draft"]
    _refused(run, "draft", AGENT, "pass bean, branch, commit in produced")  # log capture: what it must produce
    assert _take(run, "draft", AGENT, produced=WORK) == ["validate"]
    assert _take(run, "validate", AGENT) == ["valid"]
    _refused(run, "valid", AGENT, "an outcome passed by hand is refused", outcome="valid")
    assert _take(run, "valid", AGENT, facts={"errors": 2, "warnings": 0}) == ["draft"]  # computed from errors=2: fix
    _take(run, "draft", AGENT, produced=WORK)
    _take(run, "validate", AGENT)
    assert _take(run, "valid", AGENT, facts={"errors": 0}) == ["review"]  # errors=0: valid
    _refused(run, "review", AGENT, "is for role user; agent bot holds agent")
    assert _take(run, "review", USER) == ["accepted"]
    _refused(run, "accepted", AGENT, "is for role user")
    _refused(run, "accepted", USER, "needs a reason", outcome="accepted")
    assert _take(run, "accepted", USER, outcome="changes requested", reason="the proof skips a case") == ["draft"]
    _take(run, "draft", AGENT, produced=WORK)
    _take(run, "validate", AGENT)
    _take(run, "valid", AGENT, facts={"errors": 0})
    _take(run, "review", USER)
    assert _take(run, "accepted", USER, outcome="accepted", reason="says what I asked") == ["resolve"]
    assert not run.completed
    assert _take(run, "resolve", AGENT, produced=BEAN) == [] and run.completed


def test_content_lifecycle_validates_renders_and_publishes(shipped):
    run = Run.start(shipped, "content-lifecycle")
    assert _take(run, "claim", AGENT, produced=BEAN) == ["validate"]
    _take(run, "validate", AGENT)
    assert _take(run, "valid", AGENT, facts={"errors": 1}) == ["fix"]
    assert _take(run, "fix", AGENT, produced=WORK) == ["validate"]
    _take(run, "validate", AGENT)
    assert _take(run, "valid", AGENT, facts={"errors": 0}) == ["render"]
    _refused(run, "render", AGENT, "pass commit in produced")
    assert _take(run, "render", AGENT, produced={"commit": "abc123"}) == ["qa"]
    _take(run, "qa", AGENT)
    assert _take(run, "qa-gate", AGENT, facts={"errors": 0, "warnings": 9}) == ["fix"]  # qa-gate.dmn: more than 5 warnings → revise
    _take(run, "fix", AGENT, produced=WORK)
    _take(run, "validate", AGENT)
    _take(run, "valid", AGENT, facts={"errors": 0})
    _take(run, "render", AGENT, produced={"commit": "def456"})
    _take(run, "qa", AGENT)
    assert _take(run, "qa-gate", AGENT, facts={"errors": 0, "warnings": 1}) == ["review"]
    _refused(run, "review", AGENT, "is for role user")
    assert _take(run, "review", USER) == ["approved"]
    assert _take(run, "approved", USER, outcome="publish", reason="reads well rendered") == ["publish"]
    _refused(run, "publish", AGENT, "is for role user; agent bot holds agent")
    assert _take(run, "publish", USER) == ["resolve"]
    assert _take(run, "resolve", AGENT, produced=BEAN) == [] and run.completed


@pytest.mark.parametrize("facts, outcome, called", [
    ({"category": "content_authoring", "folio_type": "paper"}, None, "authoring-a-paper"),
    ({"category": "content_authoring", "folio_type": "document"}, None, "authoring-a-document"),
    ({"category": "content_authoring"}, "document", "authoring-a-document"),  # the table says ask: a judgement
    ({"category": "content_review"}, None, "content-lifecycle"),
])
def test_the_harness_routes_content_requests_to_the_seeds_content_workflows(shipped, facts, outcome, called):
    run = Run.start(shipped, "agentic-harness")
    _take(run, "sweep", AGENT)
    _take(run, "idle", AGENT)
    enabled = _take(run, "route", AGENT, facts=facts)  # facts are per pass: the gate's own
    if facts["category"] == "content_authoring":
        assert enabled == ["folio"]
        enabled = _take(run, "folio", AGENT, facts=facts)
        if outcome:
            assert enabled == ["which-folio"]
            _refused(run, "which-folio", AGENT, "needs a reason", outcome=outcome)
            enabled = _take(run, "which-folio", AGENT, outcome=outcome, reason="the user said: the user guide")
    assert [s.process.id for s in run.enabled()] == [called] and enabled == ["claim"]
