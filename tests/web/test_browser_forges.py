"""In Chromium: Settings → Forges (issue 22 §1) — add a connection with a write-only token, see the
webhook secret once, list it as "set, ••••last4", test it (accepted, then refused with the forge's
own sentence), edit and remove it; and the project page's Forge policy form."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from forge_testkit import GOOD_TOKEN, KIND, REFUSAL, REFUSED_TOKEN, registered_kit_forge

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def testforge():
    with registered_kit_forge() as forge:
        yield forge


def test_add_list_test_and_refusal_in_the_browser(page, live, axe):
    page.goto("/")
    page.get_by_role("link", name="Forges").click()
    expect(page.get_by_role("heading", name="Forges")).to_be_visible()
    page.locator("#new-forge-button").click()
    form = page.locator("#new-forge")
    page.locator("#forge-kind").select_option(KIND)
    form.get_by_label("Name").fill("gh")
    form.get_by_label("Web address").fill("https://forge.test/")
    token = form.get_by_label("Access token")
    assert token.get_attribute("type") == "password"
    token.fill(GOOD_TOKEN)
    form.get_by_role("button", name="Add connection").click()

    shown = page.locator("#webhook-secret")
    expect(shown).to_contain_text("shown once")
    [made] = live.get("/api/forges")
    secret = page.locator("#webhook-secret-value").input_value()
    assert len(secret) >= 40
    assert page.locator("#webhook-url").input_value() == f"{live.url}/api/forges/{made['id']}/webhook"
    row = page.locator("#forges tr[data-forge=gh]")
    expect(row).to_contain_text(f"set, ••••{GOOD_TOKEN[-4:]}")
    assert GOOD_TOKEN not in page.content()
    assert not axe(page)

    page.reload()  # the secret is not shown again
    expect(page.locator("#forges tr[data-forge=gh]")).to_be_visible()
    assert secret not in page.content() and GOOD_TOKEN not in page.content()

    page.get_by_role("button", name="Test gh").click()
    expect(page.locator("#forges-panel")).to_contain_text("the token works; it acts as octo-bot")

    page.get_by_role("button", name="Edit gh").click()
    edit = page.get_by_role("form", name="Edit gh")
    edit.get_by_label("New access token").fill(REFUSED_TOKEN)
    edit.get_by_role("button", name="Save").click()
    expect(page.locator("#forges tr[data-forge=gh]")).to_contain_text(f"set, ••••{REFUSED_TOKEN[-4:]}")
    page.get_by_role("button", name="Test gh").click()
    expect(page.locator("#forges-panel .form-error")).to_contain_text(REFUSAL)
    assert REFUSED_TOKEN not in page.content()

    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Remove gh").click()
    expect(page.locator("#forges-panel")).to_contain_text("No forge connections yet")
    assert live.get("/api/forges") == []


def test_a_bad_address_comes_back_on_the_form_without_the_token(page, live):
    page.goto("/forges")
    page.locator("#new-forge-button").click()
    form = page.locator("#new-forge")
    form.get_by_label("Name").fill("gh")
    form.get_by_label("Web address").fill("ftp://forge.test")
    form.get_by_label("Access token").fill(GOOD_TOKEN)
    form.get_by_role("button", name="Add connection").click()
    expect(page.locator("#new-forge .form-error")).to_contain_text("must be an http(s) URL")
    expect(page.locator("#new-forge").get_by_label("Name")).to_have_value("gh")
    assert GOOD_TOKEN not in page.content()


def test_the_project_page_sets_the_forge_policy(page, live):
    p = live.post("/api/projects", {"title": "Shop"})
    page.goto(f"/projects/{p['id']}")
    page.locator("#forge-policy-button").click()
    form = page.get_by_role("form", name="Forge policy")
    expect(form.get_by_label("Open a pull request for it")).to_be_checked()
    form.get_by_label("Open a pull request for it").uncheck()
    form.get_by_label("Automatic follow-ups per pull request").fill("1")
    form.get_by_label("When it merges, the issue goes to").select_option("in_review")
    form.get_by_role("button", name="Save policy").click()
    expect(page.locator("#forge-policy")).to_contain_text("open pull requests when asked")
    assert live.get(f"/api/projects/{p['id']}")["forge_policy"] == {
        "auto_push": True, "auto_pr": False, "draft": True, "max_followups": 1, "on_merge": "in_review"}
