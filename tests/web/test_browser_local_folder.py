"""In Chromium: the "Add local folder" button and its folder browser (R-WEB-2).

The test server listens on 127.0.0.1 and its state dir holds the daemon id, as under
`predictorx up`; a page seen through a proxy stands in for a remote browser.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder browser starts at $HOME: a small one with a git repo, a plain folder, a file."""
    home = tmp_path / "home"
    (home / "code" / "game" / ".git").mkdir(parents=True)
    (home / "code" / "notes").mkdir()
    (home / "code" / ".cache").mkdir()
    (home / "code" / "README.md").write_text("not a folder")
    monkeypatch.setenv("HOME", str(home))
    return home


def _project(live) -> dict:
    return live.post("/api/projects", {"title": "Big game"})


def test_browse_pick_and_save_a_local_folder(page, live, home):
    daemon_id = live.register_local_daemon()
    project = _project(live)
    page.goto(f"/projects/{project['id']}")
    button = page.locator("#add-local-folder")
    expect(button).to_be_enabled()
    button.click()
    browser = page.locator("#folder-browser")
    expect(browser.locator("#selected-path")).to_have_text(str(home))
    # $HOME itself breaks a path rule, so it cannot be chosen.
    expect(browser.locator("#folder-refusal")).to_contain_text("home directory")
    expect(browser.get_by_role("button", name="Use this folder")).to_be_disabled()

    browser.locator("[data-folder=code]").click()
    expect(browser.locator("#selected-path")).to_have_text(str(home / "code"))
    # Folders only: no files, no hidden folders.
    expect(browser.locator("[data-folder]")).to_have_count(2)
    expect(browser.locator("[data-folder=game]")).to_be_visible()
    expect(browser.get_by_text("README.md")).to_have_count(0)

    browser.locator("[data-folder=game]").click()
    expect(browser.locator("#selected-path")).to_have_text(str(home / "code" / "game"))
    # A git folder on a machine that declared local-worktree-v1 starts in worktree mode (seed 001).
    expect(browser.locator("input[value=worktree]")).to_be_checked()
    expect(browser.get_by_label("Label")).to_have_value("game")
    browser.locator("input[value=in_place]").check()
    browser.get_by_label("Label").fill("main checkout")
    browser.get_by_role("button", name="Use this folder").click()

    expect(page.locator("dialog#local-folder")).to_be_hidden()
    row = page.locator("#resource-list .resource[data-type=local_directory]")
    expect(row).to_contain_text("main checkout")
    expect(row).to_contain_text(str(home / "code" / "game"))
    stored = live.get(f"/api/projects/{project['id']}")["resources"]
    assert stored[0]["resource_ref"] == {"local_path": str(home / "code" / "game"), "daemon_id": daemon_id,
                                         "execution_mode": "in_place"}
    assert stored[0]["label"] == "main checkout"
    # One local folder per machine: now the button explains why it cannot be used.
    expect(page.locator("#add-local-folder")).to_be_disabled()
    expect(page.locator("#local-folder-hint")).to_contain_text("already has a local folder")


def test_button_disabled_while_the_daemon_is_offline(page, live, home, monkeypatch):
    monkeypatch.setenv("PREDICTORX_DAEMON_TIMEOUT", "1")
    daemon_id = live.register_local_daemon()
    project = _project(live)
    deadline = time.monotonic() + 30
    while live.get(f"/api/daemons/{daemon_id}")["online"]:  # a second without a heartbeat
        assert time.monotonic() < deadline, "the daemon never went offline"
        time.sleep(0.05)
    page.goto(f"/projects/{project['id']}")
    expect(page.locator("#add-local-folder")).to_be_disabled()
    expect(page.locator("#local-folder-hint")).to_contain_text("offline")

    live.daemon("/api/daemon/heartbeat", {"task_ids": []})
    page.reload()
    expect(page.locator("#add-local-folder")).to_be_enabled()


def test_button_absent_on_a_remote_page(browser, live, home):
    live.register_local_daemon()
    project = _project(live)
    # Through a proxy the server cannot know the browser is on its machine.
    context = browser.new_context(base_url=live.url, extra_http_headers={"X-Forwarded-For": "203.0.113.7"})
    try:
        page = context.new_page()
        live.sign_in(page)
        page.goto(f"/projects/{project['id']}")
        expect(page.get_by_role("button", name="+ Git repository")).to_be_visible()
        expect(page.locator("#add-local-folder")).to_have_count(0)
        assert page.goto(f"/projects/{project['id']}/local-folders").status == 403
    finally:
        context.close()
