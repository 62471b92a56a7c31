"""In Chromium: making an autopilot on the /autopilots page (issue 27 §5). A refused one is said next
to the form with what was typed kept; corrected, it is made and its page shows it; a webhook one
shows its signing secret once. Both pages pass axe-core."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_an_autopilot_is_made_on_the_page_after_a_refusal_shown_by_the_form(page, live, axe):
    live.post("/api/agents", {"name": "nightly-bot", "provider": "command", "command": ["true"]})
    page.goto("/autopilots")
    form = page.locator("#new-autopilot")
    expect(form).to_be_visible()
    assert axe(page) == []
    form.get_by_label("Name").fill("nightly-deps")
    form.get_by_label("Issue title").fill("Dependency check {{date}}")
    page.locator("#autopilot-assignee").select_option("nightly-bot")
    form.get_by_label("Cron").fill("every night")
    form.get_by_label("Time zone").fill("Europe/Berlin")
    form.get_by_role("button", name="Create autopilot").click()
    expect(page.locator("#new-autopilot [role=alert]")).to_contain_text("is not a cron expression")
    form = page.locator("#new-autopilot")
    expect(form.get_by_label("Name")).to_have_value("nightly-deps")
    expect(page.locator("#autopilot-assignee")).to_have_value("nightly-bot")
    expect(form.get_by_label("Time zone")).to_have_value("Europe/Berlin")
    assert axe(page) == []
    form.get_by_label("Cron").fill("30 2 * * *")
    form.get_by_role("button", name="Create autopilot").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("nightly-deps")
    expect(page.locator("dl.props")).to_contain_text("30 2 * * * in Europe/Berlin")
    assert axe(page) == []

    page.goto("/autopilots")
    form = page.locator("#new-autopilot")
    form.get_by_label("Name").fill("triage")
    form.get_by_label("Issue title").fill("Triage {{date}}")
    form.get_by_label("Webhook trigger").check()
    form.get_by_role("button", name="Create autopilot").click()
    expect(page.locator("#autopilot-secret")).to_be_visible()
    assert len(page.locator("#autopilot-secret-value").input_value()) >= 20
    assert axe(page) == []
    page.goto("/autopilots")  # the secret was shown once
    page.locator("#autopilots").get_by_role("link", name="triage").click()
    expect(page.locator("#autopilot-url")).to_be_visible()
    expect(page.locator("#autopilot-secret")).to_have_count(0)
