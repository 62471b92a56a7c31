"""In Chromium: the Agents page's sandbox box (the API's and CLI's `--sandbox`), and an agent with
runs archived instead of deleted — its runs keep their history and its name (issue 13 §2)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _agent(live, name: str) -> dict:  # noqa: ANN001
    return next(a for a in live.get("/api/agents") if a["name"] == name)


def test_the_sandbox_box_creates_and_edits_a_sandboxed_agent(page, live, axe):  # noqa: ANN001
    page.goto("/agents")
    page.locator("#new-agent-button").click()
    form = page.locator("#new-agent")
    form.get_by_label("Name").fill("boxed")
    box = form.get_by_label("Run in the sandbox")
    expect(box).not_to_be_checked()
    box.focus()
    page.keyboard.press("Space")  # by keyboard
    form.get_by_role("button", name="Create agent").click()
    expect(page.locator("#agents tr[data-agent=boxed]")).to_contain_text("sandboxed")
    assert _agent(live, "boxed")["sandbox"] is True
    assert not axe(page)

    page.get_by_role("button", name="Edit boxed").click()
    edit = page.get_by_role("form", name="Edit boxed")
    expect(edit.get_by_label("Run in the sandbox")).to_be_checked()
    edit.get_by_label("Run in the sandbox").uncheck()
    edit.get_by_role("button", name="Save").click()
    expect(page.locator("#agents tr[data-agent=boxed]")).not_to_contain_text("sandboxed")
    assert _agent(live, "boxed")["sandbox"] is False
