"""The BPMN workflows the seed names ship as examples (R-HAR-8), including the bean lifecycle and
the harness's own idle/workflow state machine."""

from __future__ import annotations

import pytest

from predictorx.harness.engine import Run
from predictorx.harness.library import SHIPPED, load_library

# Seed 003's workflow table, as shipped: the CRDM requirements workflow ships as feature-request.
SHIPPING = ["document-ingestion", "draft-to-publication", "evidence-retrieval", "feature-request",
            "bean-lifecycle", "agentic-harness"]
NOT_YET = ["authoring-a-paper", "authoring-a-document", "content-lifecycle"]


def test_the_seeds_workflows_and_the_two_it_lists_as_missing_ship():
    lib = load_library([SHIPPED])
    for pid in SHIPPING:
        assert pid in lib.processes and Run.start(lib, pid).enabled(), pid
    harness = lib.processes["agentic-harness"]
    assert {"idle", "route"} <= set(harness.nodes)  # the idle state and the classification routing


@pytest.mark.xfail(strict=True, reason="R-HAR-8 not fully met: the seed's authoring-a-paper, authoring-a-document "
                                       "and content-lifecycle workflows are not shipped yet")
def test_the_seeds_authoring_and_content_lifecycle_workflows_ship():
    assert set(NOT_YET) <= set(load_library([SHIPPED]).processes)
