"""Every page on a phone (issue 26 §9), in Chromium at 390×844: no horizontal page scroll (tables,
code and boards scroll inside their own box), no serious or critical axe-core finding in the light
and the dark theme, the sidebar folded into an accessible menu button, and the primary actions
(New issue, Run again, Cancel, Sign out) on screen."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from test_browser_quality import _world  # the pages the desktop axe test walks: one list for both

pytestmark = pytest.mark.browser
PHONE = {"width": 390, "height": 844}

# What is wider than the screen, for the failure message: the outermost elements that stick out.
WIDEST = """() => {
  const w = innerWidth, out = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.right > w + 1 && !out.some(o => o.contains(el))) out.push(el);
  }
  return out.slice(0, 6).map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '') +
    ' ' + Math.round(el.getBoundingClientRect().right) + 'px');
}"""


@pytest.fixture
def phone(browser, live):
    # Not is_mobile: a mobile viewport zooms out to fit wide content, hiding the overflow this measures.
    context = browser.new_context(viewport=PHONE, base_url=live.url, has_touch=True)
    p = context.new_page()
    live.sign_in(p)
    yield p
    context.close()


def _overflow(page) -> str | None:
    width, inner = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    return None if width <= inner else f"{width}px wide in {inner}px: {page.evaluate(WIDEST)}"


def test_every_page_fits_a_phone_and_passes_axe_in_both_themes(phone, live, branch_repo, axe):
    pages = _world(live, branch_repo)
    pages.update({"room": pages["project"] + "/room", "waiting": "/waiting", "forges": "/forges"})
    problems: dict[str, list[str]] = {}
    for scheme in ("light", "dark"):
        phone.emulate_media(color_scheme=scheme)
        for name, path in pages.items():
            phone.goto(path)
            found = axe(phone)
            if scheme == "light" and (wide := _overflow(phone)):
                found.append(wide)
            if found:
                problems[f"{name} ({scheme})"] = found
    phone.context.clear_cookies()
    phone.goto("/login")
    if found := axe(phone) + ([wide] if (wide := _overflow(phone)) else []):
        problems["sign in"] = found
    assert not problems, "\n".join(f"{k}: {v}" for k, v in problems.items())


def _on_screen(page, locator) -> None:
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box


def test_the_sidebar_is_a_menu_button_and_primary_actions_are_on_screen(phone, live):
    live.register_local_daemon()
    live.post("/api/agents", {"name": "claude", "provider": "claude"})
    issue = live.post("/api/issues", {"title": "A long title that a phone has to wrap somewhere, not scroll: "
                                               "checkout-service-refactoring-with-no-spaces-at-all",
                                      "assignee": "claude"})
    queued = live.get(f"/api/issues/{issue['number']}/runs")[0]

    phone.goto("/issues")
    nav = phone.get_by_role("navigation", name="Main")
    menu = phone.get_by_role("button", name="Menu")
    expect(nav).to_be_hidden()  # the sidebar does not fill the first screen
    expect(menu).to_have_attribute("aria-expanded", "false")
    _on_screen(phone, phone.get_by_role("button", name="New issue"))
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    _on_screen(phone, nav.get_by_role("link", name="Agents"))
    _on_screen(phone, phone.get_by_role("button", name="Sign out"))
    phone.keyboard.press("Escape")
    expect(nav).to_be_hidden()
    expect(menu).to_have_attribute("aria-expanded", "false")

    phone.goto(f"/tasks/{queued['id']}")
    _on_screen(phone, phone.locator("#cancel-task"))
    assert _overflow(phone) is None, _overflow(phone)
    phone.once("dialog", lambda dialog: dialog.accept())  # "Cancel this run?"
    phone.locator("#cancel-task").click()
    _on_screen(phone, phone.locator("#rerun-task"))
    assert _overflow(phone) is None, _overflow(phone)


def test_without_scripts_the_menu_stays_open(browser, live):
    context = browser.new_context(viewport=PHONE, base_url=live.url, java_script_enabled=False)
    page = context.new_page()
    page.goto(live.login_link())
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/login" not in url)
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    context.close()
