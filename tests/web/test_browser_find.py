"""In Chromium (issue 26 §3): the issue list's filters and search make a link that reproduces the
view; a project's board; the command palette (Ctrl-K) and the shortcuts (c, /, ?, g i, g p,
Ctrl-Enter), none of which fires while typing; labels from the issue page. axe-core finds nothing
serious with the palette or the help open, in the light and the dark theme."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _seed(live) -> str:
    project = live.post("/api/projects", {"title": "Checkout"})
    live.post("/api/issues", {"title": "Flaky payment tests", "priority": "high", "project_id": project["id"]})
    live.post("/api/issues", {"title": "Dark mode contrast", "priority": "low"})
    live.post("/api/issues", {"title": "Slow search", "status": "backlog", "project_id": project["id"]})
    return project["id"]


def test_filters_and_search_make_a_link_that_reproduces_the_view(page, live, browser):
    _seed(live)
    page.goto("/issues")
    rows = page.locator("#issues tbody a.strong")
    expect(rows).to_have_count(3)
    page.keyboard.press("/")  # focuses the search
    expect(page.locator("#issue-search")).to_be_focused()
    page.keyboard.type("flaky")
    page.keyboard.press("Enter")
    expect(rows).to_have_text(["Flaky payment tests"])
    page.locator("#issue-filters select[name=priority]").select_option("high")  # a select applies at once
    page.wait_for_url(re.compile(r"priority=high"))
    assert "search=flaky" in page.url and "status=" not in page.url  # empty fields stay out of the link
    expect(rows).to_have_text(["Flaky payment tests"])
    link = page.url
    other = browser.new_context(base_url=live.url)
    second = other.new_page()
    live.sign_in(second)
    second.goto(link)
    expect(second.locator("#issues tbody a.strong")).to_have_text(["Flaky payment tests"])
    expect(second.locator("#issue-search")).to_have_value("flaky")
    other.close()
    page.get_by_role("link", name="Clear").click()
    expect(rows).to_have_count(3)
    page.locator("#issue-filters select[name=group]").select_option("priority")
    expect(page.locator("tr.group-row th")).to_have_text(["High", "Low", "No priority"])


def test_a_project_board_and_moving_a_card_on_it(page, live):
    project_id = _seed(live)
    page.goto(f"/issues?view=board&project={project_id}")
    expect(page.locator(".cards > li[id]")).to_have_count(2)
    page.locator("#c1").get_by_role("button", name="To In progress").click()
    expect(page.locator('[data-status="in_progress"] #c1')).to_be_visible()
    expect(page.locator(".cards > li[id]")).to_have_count(2)  # still this project's board


def test_palette_and_shortcuts(page, live, axe):
    _seed(live)
    page.goto("/issues/2")
    page.keyboard.press("Control+k")
    dialog = page.get_by_role("dialog", name="Command palette")
    expect(dialog).to_be_visible()
    expect(page.locator("#palette-input")).to_be_focused()
    page.keyboard.type("flaky")
    expect(dialog.get_by_role("option").first).to_contain_text("Flaky payment tests")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert axe(page) == [], scheme
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.keyboard.press("Control+k")
    page.keyboard.type("checkout")
    expect(dialog.get_by_role("option", name=re.compile("Board Checkout"))).to_be_visible()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")  # the second option: the project's board
    page.wait_for_url(re.compile(r"/issues\?view=board&project="))

    page.keyboard.press("?")
    help_dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(help_dialog).to_be_visible()
    for keys in ("Ctrl K", "c", "/", "g i", "g p", "?", "Ctrl Enter", "Esc"):
        expect(help_dialog.locator("td", has_text=re.compile("^" + re.escape(keys) + "$"))).to_have_count(1)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert axe(page) == [], scheme
    page.keyboard.press("Escape")
    expect(help_dialog).to_be_hidden()

    page.keyboard.press("g")
    page.keyboard.press("p")
    page.wait_for_url(live.url + "/")
    page.keyboard.press("g")
    page.keyboard.press("i")
    page.wait_for_url(re.compile(r"/issues$"))
    search = page.locator("#issue-search")
    search.focus()
    page.keyboard.type("c?")  # typing in a field: no shortcut
    expect(search).to_have_value("c?")
    expect(page.locator("dialog[open]")).to_have_count(0)
    search.blur()
    page.keyboard.press("c")
    new_issue = page.locator("dialog#new-issue")
    expect(new_issue).to_be_visible()
    page.keyboard.type("Filed from the keyboard")
    page.keyboard.press("Control+Enter")  # submits the form being typed in
    expect(page.get_by_role("heading", name="Filed from the keyboard")).to_be_visible()


def test_labels_from_the_issue_page_show_on_rows_and_filter(page, live):
    _seed(live)
    page.goto("/issues/1")
    field = page.get_by_label("Add a label")
    field.fill("payments")
    field.press("Enter")
    expect(page.get_by_role("button", name="Remove label payments")).to_be_visible()
    page.goto("/issues")
    expect(page.locator("#issues .lbl")).to_have_text(["payments"])
    page.locator("#issue-filters select[name=label]").select_option("payments")
    expect(page.locator("#issues tbody a.strong")).to_have_text(["Flaky payment tests"])
    page.goto("/issues/1")
    page.get_by_role("button", name="Remove label payments").click()
    expect(page.locator("#issue-labels")).to_contain_text("None yet")
