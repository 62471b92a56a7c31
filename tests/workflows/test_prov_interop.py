"""PROV that other tools read (issue 24 item 5): generation stated from the entity's side too,
versioned entities generated once (a branch at a commit, a bean at a step, linked by
wasRevisionOf), refused and failed attempts as invalid activities, scrapping as invalidation —
read with rdflib and with the `prov` package from PyPI, and checked against PROV-CONSTRAINTS
(unique generation, generation before usage and invalidation) by workflows/provcheck.py."""

from __future__ import annotations

import warnings
from typing import Any

from prov.model import ProvActivity, ProvDerivation, ProvDocument, ProvGeneration, ProvInvalidation
from rdflib import Graph, Literal, URIRef
from rdflib.namespace import PROV, RDF

from predictorx.workflows import prov, provcheck

PX = "https://predictorx.dev/ns/harness#"
INSTANCE = {"id": "i-1", "issue_id": "iss-1", "issue_number": 7, "process_id": "change", "diagram": "change.bpmn"}
BRANCH = "urn:predictorx:branch:agent%2Fbot%2F1"


def _row(seq: int, at: str, **kw: Any) -> dict[str, Any]:
    base = dict(seq=seq, status="done", process_id="change", diagram="change.bpmn", diagram_digest="",
                node_id="draft", node_name="Draft", kind="task", role="agent", actor_type="agent", actor_id="a-1",
                actor_name="bot", actor_roles=["agent"], outcome=None, reason=None, computed=False, produced={},
                verdict="permit", enforcement="strict", created_at=f"2026-12-01T{at}:00+00:00", attempts=1,
                last_attempt_at=None)
    return {**base, **kw}


def history() -> list[dict[str, Any]]:
    """One branch recorded by three steps (the finding: three generations of one entity), a bean
    changed twice and then scrapped by a person, a refused attempt repeated, and a failed step."""
    return [
        _row(1, "10:00", produced={"bean": "b-1", "branch": "agent/bot/1", "commit": "abc"}),
        _row(2, "10:30", status="refused", verdict="deny", attempts=3, last_attempt_at="2026-12-01T10:40:00+00:00",
             node_id="signoff", actor_roles=["agent"]),
        _row(3, "11:00", node_id="signoff", node_name="Sign off", role="stakeholder", actor_type="person",
             actor_id="u-1", actor_name="ann", produced={"branch": "agent/bot/1", "commit": "abc"}),
        _row(4, "12:00", node_id="implement", produced={"bean": "b-1", "branch": "agent/bot/1", "commit": "def"}),
        _row(5, "13:00", kind="bean", node_id="bean:scrap", role="stakeholder", actor_type="person", actor_id="u-1",
             actor_name="ann", produced={"bean": "b-1"}),
        _row(6, "13:30", status="failed", node_id="implement", reason="the engine ran 2000 of its own steps …"),
    ]


def _graph(doc: dict[str, Any]) -> Graph:
    return Graph().parse(data=prov.dumps(doc), format="json-ld")


def read_with_prov_package(doc: dict[str, Any]) -> ProvDocument:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rdflib's deprecations inside prov; prov:Role is no PROV-DM type
        return ProvDocument.deserialize(content=prov.dumps(doc), format="rdf", rdf_format="json-ld")


def assert_prov_travels(doc: dict[str, Any]) -> Graph:
    """What every record must satisfy: PROV-CONSTRAINTS hold, and the `prov` package reads one
    generation per generated entity, the one rdflib reads."""
    g = _graph(doc)
    assert provcheck.violations(g) == []
    generated = {(str(e), str(a)) for e, a in g.subject_objects(PROV.wasGeneratedBy)}
    assert generated == {(str(e), str(a)) for a, e in g.subject_objects(PROV.generated)} and generated
    read = read_with_prov_package(doc)
    gens = list(read.get_records(ProvGeneration))
    assert sorted((r.get_attribute("prov:entity").pop().uri, r.get_attribute("prov:activity").pop().uri)
                  for r in gens) == sorted(generated)
    return g


def test_each_version_is_generated_once_and_generation_is_stated_both_ways():
    doc = prov.document(INSTANCE, history())
    g = assert_prov_travels(doc)
    step = lambda n: URIRef(f"urn:predictorx:step:i-1/{n}")
    at_abc, at_def = URIRef(f"{BRANCH}@abc"), URIRef(f"{BRANCH}@def")
    assert set(g.subjects(PROV.specializationOf, URIRef(BRANCH))) == {at_abc, at_def}
    assert list(g.objects(at_abc, PROV.wasGeneratedBy)) == [step(1)]   # not by step 3, which used it
    assert (step(3), PROV.used, at_abc) in g and (step(3), PROV.generated, at_abc) not in g
    assert list(g.objects(at_def, PROV.wasGeneratedBy)) == [step(4)]
    assert (at_def, PROV.wasRevisionOf, at_abc) in g and (step(4), PROV.used, at_abc) in g
    assert g.value(at_def, PROV.generatedAtTime).toPython().isoformat() == "2026-12-01T12:00:00+00:00"
    bean1, bean4 = URIRef("urn:predictorx:bean:b-1@i-1/1"), URIRef("urn:predictorx:bean:b-1@i-1/4")
    assert (bean4, PROV.wasRevisionOf, bean1) in g
    assert (bean4, PROV.wasInvalidatedBy, step(5)) in g and (step(5), PROV.invalidated, bean4) in g
    assert (bean1, PROV.wasInvalidatedBy, None) not in g
    assert list(g.objects(URIRef("urn:predictorx:commit:abc"), PROV.wasGeneratedBy)) == [step(1)]


def test_refused_and_failed_attempts_are_invalid_activities_that_change_nothing():
    g = _graph(prov.document(INSTANCE, history()))
    for n, kind, status in ((2, "RefusedAttempt", "refused"), (6, "FailedAttempt", "failed")):
        act = URIRef(f"urn:predictorx:step:i-1/{n}")
        assert (act, RDF.type, PROV.Activity) in g and (act, RDF.type, URIRef(PX + kind)) in g
        assert g.value(act, URIRef(PX + "valid")) == Literal(False)
        assert g.value(act, URIRef(PX + "status")) == Literal(status)
        assert g.value(act, PROV.wasAssociatedWith) == URIRef("urn:predictorx:agent:a-1")
        assert (act, PROV.generated, None) not in g and (act, PROV.invalidated, None) not in g
    refused = URIRef("urn:predictorx:step:i-1/2")
    assert g.value(refused, URIRef(PX + "attempts")).toPython() == 3
    assert str(g.value(refused, PROV.endedAtTime)) == "2026-12-01T10:40:00+00:00"
    assert (URIRef("urn:predictorx:step:i-1/3"), PROV.wasInformedBy, URIRef("urn:predictorx:step:i-1/1")) in g


def test_the_prov_package_reads_generations_revisions_invalidation_and_every_activity():
    read = read_with_prov_package(prov.document(INSTANCE, history()))
    assert len(list(read.get_records(ProvActivity))) == 6
    assert len(list(read.get_records(ProvGeneration))) == 6  # abc, def, branch@abc, branch@def, bean@1, bean@4
    [inv] = list(read.get_records(ProvInvalidation))
    assert inv.get_attribute("prov:entity").pop().uri == "urn:predictorx:bean:b-1@i-1/4"
    revisions = sorted((r.get_attribute("prov:generatedEntity").pop().uri, r.get_attribute("prov:usedEntity").pop().uri)
                       for r in read.get_records(ProvDerivation))
    assert revisions == [("urn:predictorx:bean:b-1@i-1/4", "urn:predictorx:bean:b-1@i-1/1"),
                         (f"{BRANCH}@def", f"{BRANCH}@abc")]
    assert "wasGeneratedBy(" in read.get_provn()  # and it writes PROV-N from it


def test_the_constraint_check_finds_what_the_old_record_did_wrong():
    g = Graph()
    ent, a1, a3 = URIRef(BRANCH), URIRef("urn:x:a1"), URIRef("urn:x:a3")
    for a, hour in ((a1, 10), (a3, 11)):  # the old record: one branch generated by several steps
        g.add((a, PROV.generated, ent))
        g.add((a, PROV.startedAtTime, Literal(f"2026-12-01T{hour}:00:00+00:00", datatype=URIRef(
            "http://www.w3.org/2001/XMLSchema#dateTime"))))
    found = provcheck.violations(g)
    assert any(v.startswith(f"unique-generation: {BRANCH} is generated by 2 activities") for v in found)
    assert sum("does not say prov:wasGeneratedBy" in v for v in found) == 2
    # ordering: used before it was generated, invalidated before it was generated
    doc = prov.document(INSTANCE, history())
    for node in doc["@graph"]:
        if node["@id"] == f"{BRANCH}@def":
            node["prov:generatedAtTime"]["@value"] = "2026-12-01T13:10:00+00:00"
        if node["@id"] == "urn:predictorx:bean:b-1@i-1/4":
            node["prov:invalidatedAtTime"]["@value"] = "2026-12-01T11:00:00+00:00"
    found = provcheck.violations(_graph(doc))
    assert any(v.startswith("generation-precedes-end:") and "@def" in v for v in found)
    assert any(v.startswith("generation-precedes-invalidation: urn:predictorx:bean:b-1@i-1/4") for v in found)
    assert any(v.startswith("start-precedes-invalidation:") for v in found)


def test_same_history_same_bytes():
    assert prov.dumps(prov.document(INSTANCE, history())) == prov.dumps(prov.document(INSTANCE, history()))
