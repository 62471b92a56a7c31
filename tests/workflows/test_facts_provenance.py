"""Facts with provenance (issue 24 item 1): a gate reads system facts Predictor X computes at the
pass and facts asserted with the pass — never a system fact by hand, never a fact from an earlier
pass — and the record and its PROV document say which were which."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import rdflib

from predictorx.service import beans
from predictorx.service import workflow_instances as instances
from predictorx.service.auth import bootstrap_owner
from predictorx.service.issues import create_issue
from predictorx.service.workflow_instances import Completion, StepForbidden
from predictorx.workflows import prov
from predictorx.workflows.dmn import load_dmn
from predictorx.workflows.engine import Actor, Run, StepRefused
from predictorx.workflows.library import SHIPPED, load_library

from .deliveries import record_run, sha

AGENT = Actor("agent", "a-1", "bot", frozenset({"agent"}))
STAKEHOLDER = Actor("person", "u-1", "ann", frozenset({"stakeholder"}))
FR = "feature-request"
C1, C2 = sha("c1"), sha("c2")


@pytest.fixture(scope="module")
def shipped():
    return load_library([SHIPPED])


def _to_more(lib, system):
    run = Run.start(lib, FR)
    for ref, actor, kw in [("capture", AGENT, {}), ("requirements", AGENT, {}), ("signoff", STAKEHOLDER, {}),
                           ("approved", STAKEHOLDER, {"outcome": "approved", "reason": "ok"}),
                           ("plan-beans", AGENT, {}),
                           ("implement", AGENT, {"produced": {"bean": "b", "branch": "feat/7-x", "commit": "c1"}})]:
        run.apply(run.prepare(run.find(ref, actor), system=system, issue_number=7, **kw))
    return run


def test_a_system_fact_passed_by_hand_is_refused_on_a_gate_and_on_a_task(shipped):
    world = {"beans_created": 0, "beans_in_progress": 1}
    run = _to_more(shipped, lambda names: dict(world))
    with pytest.raises(StepRefused, match=r"open_beans is a system fact Predictor X computes at the pass .* "
                                          "never passed by hand"):
        run.prepare(run.find("more", AGENT), facts={"open_beans": 0}, system=lambda names: dict(world))
    with pytest.raises(StepRefused, match="beans_in_progress is a system fact"):
        run.prepare(run.find("more", AGENT), facts={"beans_in_progress": 0}, system=lambda names: dict(world))
    fresh = Run.start(shipped, FR)
    with pytest.raises(StepRefused, match="ci_state is a system fact"):
        fresh.prepare(fresh.find("capture", AGENT), facts={"ci_state": "success"})


def test_each_pass_computes_its_system_facts_anew(shipped):
    world = {"beans_created": 1, "beans_in_progress": 1}
    run = _to_more(shipped, lambda names: dict(world))
    p = run.prepare(run.find("more", AGENT), system=lambda names: dict(world))
    assert (p.outcome, p.facts, p.fact_sources) == ("next bean", world, {n: "system" for n in world})
    run.apply(p)
    run.apply(run.prepare(run.find("implement", AGENT), produced={"bean": "b", "branch": "feat/7-x", "commit": "c2"}))
    world.update(beans_created=0, beans_in_progress=2)
    p = run.prepare(run.find("more", AGENT), system=lambda names: dict(world))
    assert (p.outcome, p.facts) == ("beans to accept", world)  # in progress is not done
    run.apply(p)
    run.apply(run.prepare(run.find("accept-beans", STAKEHOLDER)))
    world.update(beans_in_progress=0)
    p = run.prepare(run.find("more", AGENT), system=lambda names: dict(world))
    assert (p.outcome, p.facts) == ("all done", {"beans_created": 0, "beans_in_progress": 0})
    with pytest.raises(StepRefused, match="beans_created .* cannot be computed here"):
        run.prepare(run.find("more", AGENT))  # no world to read: never a default, never the last value


def test_asserted_facts_are_per_pass_never_carried_over(shipped):
    run = Run.start(shipped, "authoring-a-paper")
    for ref, kw in [("claim", {"produced": {"bean": "b"}}), ("plan", {}),
                    ("draft", {"produced": {"bean": "b", "branch": "x", "commit": "c"}}), ("validate", {})]:
        run.apply(run.prepare(run.find(ref, AGENT), **kw))
    p = run.prepare(run.find("valid", AGENT), facts={"errors": 2})
    assert (p.outcome, p.fact_sources) == ("fix", {"errors": "asserted"})
    run.apply(p)
    for ref, kw in [("draft", {"produced": {"bean": "b", "branch": "x", "commit": "c2"}}), ("validate", {})]:
        run.apply(run.prepare(run.find(ref, AGENT), **kw))
    with pytest.raises(StepRefused, match="facts are per pass, never carried over: pass errors with this pass"):
        run.prepare(run.find("valid", AGENT))  # errors=2 of the earlier pass is not read again


def test_a_table_cannot_declare_a_computed_fact_asserted_nor_invent_a_system_fact(tmp_path: Path):
    dmn = tmp_path / "t.dmn"
    dmn.write_text('''<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" xmlns:px="urn:x" id="d" name="d"
      namespace="n"><decision id="t" name="t"><decisionTable id="dt">
      <input id="i1" px:fact="asserted"><inputExpression id="e1"><text>open_beans</text></inputExpression></input>
      <input id="i2" px:fact="system"><inputExpression id="e2"><text>moon_phase</text></inputExpression></input>
      <output id="o" name="route"/>
      <rule id="r"><inputEntry><text>-</text></inputEntry><inputEntry><text>-</text></inputEntry>
      <outputEntry><text>"x"</text></outputEntry></rule></decisionTable></decision></definitions>''')
    problems = load_dmn(dmn)["t"].problems
    assert any("'open_beans' is declared asserted, but Predictor X computes it" in p for p in problems)
    assert any("'moon_phase' is declared a system fact, but Predictor X computes no fact" in p for p in problems)


# ---- in the database: the two findings of issue 24, and the record ----

@pytest.fixture
def issue_id(db):
    with db.write() as s:
        _, ws, user = bootstrap_owner(s)
        return create_issue(s, ws.id, user.id, title="Add CSV export").id


def _issue(s, issue_id):
    from predictorx.store.schema import Issue
    return s.get(Issue, issue_id)


def _run_to_more(s, lib, issue, titles):
    inst, _ = instances.start(s, lib, issue, FR)
    record_run(s, issue, AGENT, [C2, C1])  # implement is a commit boundary: the agent's run made these
    for t in titles:
        beans.create(s, issue, t)
    for ref, actor, kw in [("capture", AGENT, {}), ("requirements", AGENT, {}), ("signoff", STAKEHOLDER, {}),
                           ("approved", STAKEHOLDER, {"outcome": "approved", "reason": "ok"}),
                           ("plan-beans", AGENT, {}),
                           ("implement", AGENT, {"produced": {"bean": titles[0], "branch": f"feat/{issue.number}-a",
                                                              "commit": C1}})]:
        instances.complete(s, lib, issue, inst, actor, Completion(ref, **kw))
    return inst


def test_open_beans_0_passed_while_a_bean_is_in_progress_does_not_complete_the_workflow(db, shipped, issue_id):
    with db.write() as s:
        issue = _issue(s, issue_id)
        inst = _run_to_more(s, shipped, issue, ["CSV writer"])
        assert beans.get(s, issue, "CSV writer").status == "in-progress"
        with pytest.raises(StepForbidden, match="open_beans is a system fact"):
            instances.complete(s, shipped, issue, inst, AGENT, Completion("more", facts={"open_beans": 0}))
        row, enabled = instances.complete(s, shipped, issue, inst, AGENT, Completion("more"))
        assert (row.outcome, row.facts, row.fact_sources) == (
            "beans to accept", {"beans_created": 0, "beans_in_progress": 1},
            {"beans_created": "system", "beans_in_progress": "system"})
        assert inst.status == "running" and [e["node"] for e in enabled] == ["accept-beans"]


def test_an_earlier_open_beans_2_is_not_reused_on_a_later_pass(db, shipped, issue_id):
    with db.write() as s:
        issue = _issue(s, issue_id)
        inst = _run_to_more(s, shipped, issue, ["A", "B"])
        row, _ = instances.complete(s, shipped, issue, inst, AGENT, Completion("more"))
        assert (row.outcome, row.facts) == ("next bean", {"beans_created": 1, "beans_in_progress": 1})
        instances.complete(s, shipped, issue, inst, AGENT, Completion(
            "implement", produced={"bean": "B", "branch": f"feat/{issue.number}-b", "commit": C2}))
        for t in ("A", "B"):  # the stakeholder resolves them (outside the steps, as feature-request does)
            beans.resolve(s, beans.get(s, issue, t), by="person ann")
        row, enabled = instances.complete(s, shipped, issue, inst, AGENT, Completion("more"))
        assert (row.outcome, row.facts) == ("all done", {"beans_created": 0, "beans_in_progress": 0})
        assert [e["node"] for e in enabled] == ["review"] and inst.facts == {}


def test_the_prov_record_says_which_facts_were_computed_and_which_asserted_and_by_whom(db, shipped, issue_id):
    with db.write() as s:
        issue = _issue(s, issue_id)
        inst = _run_to_more(s, shipped, issue, ["A"])
        instances.complete(s, shipped, issue, inst, AGENT, Completion("more"))
        steps = [instances.step_dict(r) for r in instances.history(s, inst)]
        doc = prov.document(instances.instance_dict(inst, issue), steps)
    facts = {n["px:fact"]: n for n in doc["@graph"] if "px:fact" in n}
    assert set(facts) == {"beans_created", "beans_in_progress"}
    assert facts["beans_in_progress"]["px:factSource"] == "system" and facts["beans_in_progress"]["px:value"] == "1"
    assert facts["beans_in_progress"]["prov:wasAttributedTo"] == {"@id": prov.SYSTEM_AGENT}
    g = rdflib.Graph().parse(data=json.dumps(doc), format="json-ld")
    PROV = rdflib.Namespace(prov.PROV)
    used = {str(o) for _, _, o in g.triples((None, PROV.used, None))}
    assert facts["beans_in_progress"]["@id"] in used
    assert (rdflib.URIRef(facts["beans_in_progress"]["@id"]), PROV.wasAttributedTo,
            rdflib.URIRef(prov.SYSTEM_AGENT)) in g


def test_an_asserted_fact_is_attributed_to_whoever_asserted_it():
    st = {"seq": 3, "status": "done", "node_id": "valid", "node_name": "v", "diagram": "p.bpmn", "kind": "gate",
          "role": "agent", "actor_type": "agent", "actor_id": "a-1", "actor_name": "bot", "outcome": "fix",
          "computed": True, "facts": {"errors": 2}, "fact_sources": {"errors": "asserted"}, "produced": {},
          "created_at": "2026-12-05T14:00:00+00:00"}
    doc = prov.document({"id": str(uuid.uuid4()), "issue_id": "i", "process_id": "p", "diagram": "p.bpmn"}, [st])
    [fact] = [n for n in doc["@graph"] if n.get("px:fact") == "errors"]
    assert fact["px:factSource"] == "asserted" and fact["prov:wasAttributedTo"] == {"@id": prov.iri("agent", "a-1")}
    assert prov.SYSTEM_AGENT not in {n["@id"] for n in doc["@graph"]}


def test_system_facts_are_read_from_the_world_at_the_moment_asked(db, shipped, issue_id):
    from predictorx.service.workflow_facts import provider
    with db.write() as s:
        issue = _issue(s, issue_id)
        inst = _run_to_more(s, shipped, issue, ["A", "B"])
        compute = provider(s, issue, inst, None)
        got = compute({"open_beans", "beans_created", "beans_in_progress", "beans_total", "elapsed_seconds",
                       "ci_state", "review_state"})
        assert (got["open_beans"], got["beans_created"], got["beans_in_progress"], got["beans_total"]) == (2, 1, 1, 2)
        assert got["ci_state"] is None and got["review_state"] is None  # no pull request known: null, never a guess
        assert 0 <= got["elapsed_seconds"] < 600 and set(compute({"open_beans"})) == {"open_beans"}
        beans.scrap(s, beans.get(s, issue, "B"), "not needed", by="person ann")
        assert compute({"open_beans"}) == {"open_beans": 1}
