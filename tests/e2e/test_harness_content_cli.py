"""Content authoring through the CLI against a real server (R-HAR-2, R-HAR-8): the classification
table picks the authoring workflow by the folio the request names; where it cannot, `classify
--issue` records the judgement, which must name the folio (`--folio`), else exits non-zero with a
sentence."""

from __future__ import annotations

import json


def test_classify_picks_the_authoring_workflow_and_a_judgement_names_the_folio(server):
    c = json.loads(server.cli("classify", "Expand the proof of lemma 3 in the paper", "-o", "json").stdout)
    assert (c["category"], c["method"], c["workflow"]) == ("content_authoring", "table", "authoring-a-paper")
    n = json.loads(server.cli("issue", "create", "--title", "Draft a section on pricing", "-o", "json").stdout)["number"]
    [c] = server.api("GET", f"/api/issues/{n}/classifications")
    assert (c["category"], c["method"], c["workflow"]) == ("content_authoring", "pending", None)
    p = server.cli("classify", "x", "--issue", str(n), "--category", "content_authoring", "--reason", "asked",
                   check=False)
    assert p.returncode != 0 and "needs the folio it is for" in p.stderr and "Traceback" not in p.stderr
    p = server.cli("classify", "x", "--issue", str(n), "--category", "content_authoring", "--folio", "document",
                   "--reason", "the user said it goes in the pricing guide", "-o", "json")
    assert json.loads(p.stdout)["workflow"] == "authoring-a-document"
    shown = json.loads(server.cli("workflow", "show", str(n), "authoring-a-document", "-o", "json").stdout)
    assert [e["node"] for e in shown["enabled"]] == ["claim"]
