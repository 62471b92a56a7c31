"""In Chromium: signing in, creating a project with the Repos picker (R-WEB-3), and the
Resources panel — add, edit, remove (R-WEB-1)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_login_link_sets_an_httponly_strict_cookie_and_lands_on_projects(page, live):
    assert page.url == f"{live.url}/"
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()
    cookie = next(c for c in page.context.cookies() if c["name"] == "px_token")
    assert cookie["value"].startswith("pxu_") and cookie["value"] != live.token  # a fresh web session
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert "code=" not in page.url

    page.context.clear_cookies()
    page.goto("/")
    expect(page.get_by_text("Open the link printed by")).to_be_visible()
    page.get_by_label("Sign-in code").fill(live.login_link())
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()


def test_new_project_with_picked_and_pasted_repos_in_one_step(page, live):
    ws = live.get("/api/workspaces")[0]
    live.api.patch(f"/api/workspaces/{ws['id']}", json={"repos": ["https://github.com/org/web",
                                                                   "https://github.com/org/api"]})
    page.goto("/")
    page.get_by_role("button", name="New project").first.click()
    dialog = page.locator("dialog#new-project")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Title").fill("Agent UX 2026")
    dialog.locator("select[name=priority]").select_option("high")
    dialog.locator("#repos-picker summary").click()
    dialog.get_by_label("https://github.com/org/api").check()
    dialog.locator("textarea[name=repo_urls]").fill("not a url")
    dialog.get_by_role("button", name="Create project").click()

    # The server refuses the whole creation and says why, next to the form; nothing is half made.
    expect(dialog.locator(".form-error")).to_contain_text("not a git URL")
    assert live.get("/api/projects") == []
    expect(dialog.get_by_label("Title")).to_have_value("Agent UX 2026")
    expect(dialog.get_by_label("https://github.com/org/api")).to_be_checked()

    dialog.locator("textarea[name=repo_urls]").fill("git@gitea.local:org/game.git")
    dialog.get_by_role("button", name="Create project").click()
    expect(page.get_by_role("heading", name="Agent UX 2026")).to_be_visible()
    assert "/projects/" in page.url
    expect(page.locator("#resource-list .resource")).to_have_count(2)
    expect(page.locator("#resource-list .resource").nth(0)).to_contain_text("https://github.com/org/api")
    expect(page.locator("#resource-list .resource").nth(1)).to_contain_text("git@gitea.local:org/game.git")
    project = live.get("/api/projects")[0]
    assert project["priority"] == "high"


def test_resources_panel_adds_edits_and_removes(page, live):
    project = live.post("/api/projects", {"title": "Storefront"})
    page.goto(f"/projects/{project['id']}")
    panel = page.locator("#resources")
    panel.get_by_role("button", name="+ Git repository").click()
    form = panel.locator("#add-repo-form")
    form.get_by_label("URL").fill("https://gitlab.example.com/shop/storefront.git")
    form.get_by_label("Ref").fill("release/2.0")
    form.get_by_label("Default branch hint").fill("main")
    form.get_by_label("Label").fill("shop")
    form.get_by_role("button", name="Add repository").click()
    row = panel.locator(".resource")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("shop")
    expect(row).to_contain_text("release/2.0")

    row.get_by_role("button", name="Edit").click()
    row.get_by_label("Label").fill("storefront main")
    row.get_by_role("button", name="Save").click()
    expect(panel.locator(".resource")).to_contain_text("storefront main")
    stored = live.get(f"/api/projects/{project['id']}")["resources"][0]
    assert stored["label"] == "storefront main" and stored["resource_ref"]["ref"] == "release/2.0"

    # A second identical error path: an invalid payload edit is refused with the handler's message.
    panel.locator(".resource").get_by_role("button", name="Edit").click()
    panel.locator(".resource summary").click()
    panel.locator(".resource textarea[name=payload]").fill('{"url": "https://gitlab.example.com/shop/storefront.git", "ref": "bad..ref"}')
    panel.locator(".resource").get_by_role("button", name="Save").click()
    expect(panel.locator(".resource .form-error")).to_contain_text("not a valid git branch")

    page.once("dialog", lambda d: d.accept())
    panel.locator(".resource").get_by_role("button", name="Remove").click()
    expect(panel.locator(".resource")).to_have_count(0)
    assert live.get(f"/api/projects/{project['id']}")["resources"] == []


def test_unknown_ids_show_the_404_page(page, live):
    for path in ("/projects/nope", "/issues/999", "/tasks/nope", "/no/such/page"):
        response = page.goto(path)
        assert response.status == 404
        expect(page.get_by_role("heading", name="Not found")).to_be_visible()
