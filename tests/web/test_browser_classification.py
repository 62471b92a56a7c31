"""The issue page's pending classification in Chromium (issue 24 §6): the question in plain words
(the rule only in the tooltip), a form whose choices start with the two candidates, a refused
answer shown as the use case's sentence, an accepted one starting the workflow; axe-core finds no
serious or critical violation, in the light and the dark theme."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def _axe_both_themes(page, axe) -> list[str]:
    found = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        found += [f"{scheme}: {v}" for v in axe(page)]
    page.emulate_media(color_scheme="light")
    return found


def test_a_person_answers_the_pending_classification_on_the_issue_page(page, live, axe):
    n = live.post("/api/issues", {"title": "Edit the API docs page of the platform"})["number"]
    page.goto(f"/issues/{n}")
    question = page.locator("#workflows .classification-pending")
    question.wait_for()
    text = question.inner_text()
    assert "Waiting for a judgement:" in text and "changes to the platform" in text
    assert "feature_request" not in text and "en." not in text
    form = page.get_by_role("form", name="Answer the classification question")
    assert form.get_by_label("It is").locator("option").nth(0).inner_text() in (
        "writing content", "a platform change")
    assert not (found := _axe_both_themes(page, axe)), "\n".join(found)

    form.get_by_label("It is").select_option("content_authoring")
    form.get_by_label("Why (a judgement needs a reason)").fill("the docs folio; nothing in the platform changes")
    form.get_by_role("button", name="Record the judgement").click()
    alert = page.locator("#workflows [role=alert]")
    alert.wait_for()
    assert "needs the folio it is for" in alert.inner_text()

    form = page.get_by_role("form", name="Answer the classification question")
    form.get_by_label("It is").select_option("content_authoring")
    form.get_by_label("Folio (writing content only)").select_option("document")
    form.get_by_label("Why (a judgement needs a reason)").fill("the docs folio; nothing in the platform changes")
    form.get_by_role("button", name="Record the judgement").click()
    page.locator('#workflows section.workflow[data-process="authoring-a-document"]').wait_for(timeout=30_000)
    assert "Classified as writing content by judgement" in page.locator("#workflows .classification").inner_text()
    assert page.locator("#workflows .classification-pending").count() == 0
    assert not (found := _axe_both_themes(page, axe)), "\n".join(found)
