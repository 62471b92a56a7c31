"""ODRL subset (strict validation, three-valued, any deny wins), the PROV-O record (rdflib parses
and round-trips it) and the QA/QC report (identical bytes for identical input) (R-HAR-5)."""

from __future__ import annotations

import json

import pytest
from rdflib import Graph, URIRef
from rdflib.compare import isomorphic
from rdflib.namespace import PROV, RDF

from predictorx.workflows import prov, qaqc
from predictorx.workflows.odrl import PolicyError, Request, evaluate, parse_policy

CTX = "http://www.w3.org/ns/odrl.jsonld"


def _req(**kw) -> Request:
    base = dict(actor_kind="agent", actor_name="bot", roles=frozenset({"agent"}), action="complete",
                diagram="change.bpmn", node="draft", process="change", role="agent")
    return Request(**{**base, **kw})


@pytest.mark.parametrize("doc, message", [
    ({"@context": CTX, "@type": "Set", "uid": "u", "duty": []}, "outside the ODRL subset: duty"),
    ({"@context": CTX, "@type": "Set", "uid": "u", "permission": [{"action": "fly"}]}, "action 'fly'"),
    ({"@context": CTX, "@type": "Set", "uid": "u", "permission": [{"action": "use", "constraint": [
        {"leftOperand": "dateTime", "operator": "lt", "rightOperand": "x"}]}]}, "leftOperand"),
    ({"@context": CTX, "@type": "Set", "uid": "u", "permission": [{"action": "use", "assignee": "bob"}]}, "assignee"),
    ({"@context": "http://x", "@type": "Set", "uid": "u"}, "@context"),
])
def test_policies_outside_the_subset_are_refused(doc, message):
    with pytest.raises(PolicyError, match=message):
        parse_policy(doc, "p.jsonld")


def test_three_valued_any_deny_wins_unknown_never_permits():
    p = parse_policy({"@context": CTX, "@type": "Set", "uid": "u", "permission": [
        {"assignee": "role:agent", "action": "use"}], "prohibition": [
        {"action": {"id": "approve", "includedIn": "pass"}, "target": "change.bpmn#accept"},
        {"action": "execute", "constraint": [{"leftOperand": "role", "operator": "isNoneOf",
                                               "rightOperand": ["agent", "stakeholder"]}]}]}, "p")
    assert evaluate([p], _req()).value == "permit"  # `complete` is included in `use`
    assert evaluate([p], _req(node="accept", action="pass")).value == "permit"  # approve ⊂ pass, not the reverse
    assert evaluate([p], _req(role="auditor")).value == "deny"
    assert evaluate([p], _req(role=None)).value == "unknown"  # the prohibition might apply
    assert evaluate([p], _req(roles=frozenset({"reviewer"}))).value == "unknown"  # nothing permits
    q = parse_policy({"@context": CTX, "@type": "Set", "uid": "q", "prohibition": [
        {"assignee": "agent:bot", "action": "complete"}]}, "q")
    assert evaluate([p, q], _req()).value == "deny"


def _steps():
    return [dict(seq=1, status="done", process_id="change", diagram="change.bpmn", diagram_digest="", node_id="draft",
                 node_name="Draft requirements", kind="task", role="agent", actor_type="agent", actor_id="a-1",
                 actor_name="bot", actor_roles=["agent"], outcome=None, reason=None, computed=False,
                 produced={"bean": "b-1", "commit": "abc", "branch": "agent/bot/1"}, verdict="permit",
                 enforcement="strict", created_at="2026-12-01T10:00:00+00:00"),
            dict(seq=2, status="done", process_id="change", diagram="change.bpmn", diagram_digest="", node_id="signoff",
                 node_name="Sign off", kind="task", role="stakeholder", actor_type="person", actor_id="u-1",
                 actor_name="ann", actor_roles=["stakeholder"], outcome=None, reason=None, computed=False,
                 produced={}, verdict="permit", enforcement="strict", created_at="2026-12-01T11:00:00+00:00")]


INSTANCE = {"id": "i-1", "issue_id": "iss-1", "issue_number": 7, "process_id": "change", "diagram": "change.bpmn"}


def test_prov_document_parses_with_rdflib_and_round_trips():
    text = prov.dumps(prov.document(INSTANCE, _steps()))
    g = Graph().parse(data=text, format="json-ld")
    acts = sorted(g.subjects(RDF.type, PROV.Activity))
    assert len(acts) == 2
    first = URIRef("urn:predictorx:step:i-1/1")
    assoc = g.value(first, PROV.qualifiedAssociation)
    assert g.value(assoc, PROV.hadPlan) == URIRef("urn:predictorx:plan:change.bpmn#draft")
    assert g.value(assoc, PROV.hadRole) == URIRef("urn:predictorx:role:agent")
    assert g.value(first, PROV.wasAssociatedWith) == URIRef("urn:predictorx:agent:a-1")
    assert (first, PROV.used, URIRef("urn:predictorx:issue:iss-1")) in g
    assert (first, PROV.generated, URIRef("urn:predictorx:commit:abc")) in g
    assert (URIRef("urn:predictorx:person:u-1"), RDF.type, PROV.Person) in g
    again = Graph().parse(data=g.serialize(format="json-ld"), format="json-ld")
    assert isomorphic(g, again)
    assert prov.dumps(prov.document(INSTANCE, _steps())) == text


def test_qaqc_reports_findings_identically(lib):
    steps = _steps()
    steps[0]["diagram_digest"] = lib.digests["change.bpmn"]
    steps[1]["diagram_digest"] = "0" * 64                      # source-moved
    steps.append(dict(steps[0], seq=3, node_id="gone", actor_id=None, actor_name=None))  # node-not-in-model, no-actor
    steps.append(dict(steps[0], seq=4, status="refused", actor_name="rogue", verdict="deny"))
    steps.append(dict(steps[0], seq=5, role="stakeholder", actor_roles=["stakeholder"], actor_type="person",
                      actor_name="eve", node_id="draft"))     # not-eligible (the stakeholders' policy permits it)
    steps.append(dict(steps[0], seq=6, actor_roles=["reviewer"], actor_name="rev"))  # not-eligible, unknown
    rep = qaqc.report(lib, [{"instance": INSTANCE, "steps": steps}])
    kinds = sorted((f["seq"], f["finding"]) for f in rep["findings"])
    assert (2, "source-moved") in kinds and (3, "node-not-in-model") in kinds and (3, "no-actor") in kinds
    assert (4, "refused") in kinds and (5, "not-eligible") in kinds and (6, "unknown") in kinds
    assert (6, "not-eligible") in kinds and (5, "unknown") not in kinds
    assert not any(seq == 1 for seq, _ in kinds)
    assert qaqc.to_json(rep) == qaqc.to_json(qaqc.report(lib, [{"instance": INSTANCE, "steps": list(reversed(steps))}]))
    md = qaqc.to_markdown(rep)
    assert md == qaqc.to_markdown(qaqc.report(lib, [{"instance": INSTANCE, "steps": steps}]))
    assert "| 7 | change | 4 | draft | rogue | refused |" in md
    json.loads(qaqc.to_json(rep))
