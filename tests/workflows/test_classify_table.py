"""The classification decision table (R-HAR-2): each of the seed's eight categories is reached by a
named rule of the table, the category selects the workflow, and where the table cannot decide the
answer is `pending` (a judgement with a reason is then required — see test_api.py's
test_a_pending_classification_needs_a_judgement_with_a_reason)."""

from __future__ import annotations

import pytest

from predictorx.workflows.classify import CATEGORIES, classify
from predictorx.workflows.library import SHIPPED, load_library

EXAMPLES = [
    ("Write the introduction section of the paper", "content_authoring", "authoring-a-paper"),
    ("Please review my draft chapter", "content_review", "content-lifecycle"),
    ("Import the attached report.pdf", "content_ingestion", "document-ingestion"),
    ("Add a CSV export command to the CLI", "feature_request", "feature-request"),
    ("Why does the sync take so long?", "information_request", None),
    ("Run the test suite", "tool_invocation", None),
    ("Move the CSV bean to the backlog", "work_plan_management", None),
    ("The login page crashes with a 500", "bug_report", "bug-triage"),
]


def test_examples_cover_all_eight_categories():
    assert sorted(c for _, c, _ in EXAMPLES) == sorted(CATEGORIES) and len(CATEGORIES) == 8


@pytest.mark.parametrize("text, category, workflow", EXAMPLES)
def test_the_table_decides_and_the_category_selects_the_workflow(text: str, category: str, workflow: str | None):
    first, again = classify(text), classify(text)
    assert first == again  # deterministic
    d = first.as_dict()
    assert (d["category"], d["method"], d["workflow"]) == (category, "table", workflow)
    assert d["rule"] and d["reason"]  # the record says which rule decided, and why


def test_every_selected_workflow_ships():
    lib = load_library([SHIPPED])
    assert {w for _, _, w in EXAMPLES if w} <= set(lib.processes)


# Content authoring: the folio table over the folio type the request names (seed 003: a paper folio →
# authoring-a-paper, a document folio → authoring-a-document); neither or both → a judgement names it.
FOLIO_EXAMPLES = [
    ("Write the introduction section of the paper", "paper", "authoring-a-paper"),
    ("Expand the proof of lemma 3", "paper", "authoring-a-paper"),
    ("Write the installation chapter of the user guide", "document", "authoring-a-document"),
    ("Edit the theorem section in the document folio", "document", "authoring-a-document"),  # named folio wins
    ("Draft a section on pricing", None, None),
    ("Expand the paper's summary into the report", None, None),
]


@pytest.mark.parametrize("text, folio, workflow", FOLIO_EXAMPLES)
def test_content_authoring_selects_its_workflow_by_the_folio_table(text: str, folio: str | None,
                                                                    workflow: str | None):
    d = classify(text).as_dict()
    assert (d["category"], d["folio"], d["workflow"]) == ("content_authoring", folio, workflow)
    assert d["method"] == ("table" if folio else "pending")
    assert ("the folio table decides" if folio else "cannot decide paper or document") in d["reason"]


@pytest.mark.parametrize("text", ["Penguins", "Edit the API docs page of the platform", "   "])
def test_where_the_table_cannot_decide_it_says_so(text: str):
    d = classify(text).as_dict()
    assert (d["category"], d["method"], d["workflow"]) == (None, "pending", None) and d["reason"]
