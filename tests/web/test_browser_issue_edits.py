"""In Chromium: editing an issue never loses work (issue 26 §1, §4, §10). Two tabs each save only
their own field and see each other's changes and comments live; a change made meanwhile is shown,
not overwritten; a failed save (server down, offline) keeps the choice and says so, and a lost
connection says "Reconnecting…" and catches up; a 5 MB comment keeps its text; title and
description (with a Markdown preview) are edited in place; delete names what goes with it."""

from __future__ import annotations

import re
import threading
import time

import pytest
import uvicorn
from playwright.sync_api import expect

from predictorx.server.app import create_app
from predictorx.store.schema import Issue
from predictorx.testing import free_port

pytestmark = pytest.mark.browser
LIVE = re.compile(r"\blive-on\b")


def _tab(browser, url: str, sign_in) -> tuple:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, base_url=url)
    page = context.new_page()
    sign_in(page)
    return context, page


def _connected(page) -> None:
    expect(page.locator("body")).to_have_class(LIVE)


def test_two_tabs_save_their_own_fields_and_see_each_other_live(browser, page, live):
    issue = live.post("/api/issues", {"title": "Fix the cart", "status": "todo"})
    path = f"/issues/{issue['number']}"
    context_b, tab_b = _tab(browser, live.url, live.sign_in)
    try:
        page.goto(path)
        tab_b.goto(path)
        _connected(page)
        _connected(tab_b)

        page.locator("#issue-status").select_option("done")  # tab A
        expect(tab_b.locator("#issue-status")).to_have_value("done")  # B, not reloaded, sees it live
        tab_b.locator("#issue-priority").select_option("high")
        expect(page.locator("#issue-priority")).to_have_value("high")  # and A sees B's
        page.wait_for_function(f"fetch('/api/issues/{issue['number']}').then(r => r.json())"
                               ".then(i => i.priority === 'high')", polling=200)
        stored = live.get(f"/api/issues/{issue['number']}")
        assert (stored["status"], stored["priority"]) == ("done", "high")  # B did not put the status back

        page.get_by_label("Comment").fill("Shipped in 2.1.")
        page.get_by_role("button", name="Comment").click()
        expect(tab_b.locator("#comments .comment")).to_contain_text("Shipped in 2.1.")  # live, no reload
        expect(tab_b.locator("[data-comment-total]")).to_have_text("1 comment")
    finally:
        context_b.close()


def test_a_change_made_meanwhile_is_shown_not_overwritten(page, live):
    issue = live.post("/api/issues", {"title": "Old title"})
    page.goto(f"/issues/{issue['number']}")
    _connected(page)
    page.get_by_role("button", name="Edit title").click()
    page.get_by_label("Title").fill("My title")  # editing: the live redraw leaves this field alone
    r = live.api.patch(f"/api/issues/{issue['number']}", json={"title": "Their title"})
    assert r.status_code == 200
    page.get_by_role("button", name="Save title").click()
    msg = page.locator("#msg-title")
    expect(msg).to_contain_text("owner changed the title to “Their title” after you loaded this issue")
    expect(page.get_by_label("Title")).to_have_value("My title")  # what the person typed is kept
    assert live.get(f"/api/issues/{issue['number']}")["title"] == "Their title"
    msg.get_by_role("button", name="Save mine").click()
    expect(page.locator("#issue-title-text")).to_have_text("My title")
    assert live.get(f"/api/issues/{issue['number']}")["title"] == "My title"


def test_title_description_preview_member_assignee_and_delete(page, live):
    ws = live.get("/api/workspaces")[0]["id"]
    live.post(f"/api/workspaces/{ws}/members", {"name": "mia", "role": "member"})
    issue = live.post("/api/issues", {"title": "Write docs", "body": "plain"})
    live.post(f"/api/issues/{issue['number']}/comments", {"body": "first"})
    page.goto(f"/issues/{issue['number']}")
    page.get_by_role("button", name="Edit description").click()
    area = page.get_by_label("Description (Markdown)")
    area.fill("## Steps\n\n- **one**\n- two")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#md-preview strong")).to_have_text("one")  # the server's own renderer
    page.get_by_role("button", name="Save description").click()
    expect(page.locator("#issue-description h2")).to_have_text("Steps")
    expect(page.locator("#issue-description li")).to_have_count(2)

    page.locator("#issue-assignee").select_option(label="mia")  # a person, not only agents
    page.wait_for_function(f"fetch('/api/issues/{issue['number']}').then(r => r.json())"
                           ".then(i => i.assignee_type === 'member' && i.assignee_name === 'mia')", polling=200)

    page.get_by_role("button", name="Delete issue").click()
    dialog = page.locator("#delete-issue")
    expect(dialog).to_contain_text(re.compile(r"“Write docs” will be deleted with 1 comment( and 1 workflow)?\. "
                                              r"This cannot be undone\."))
    dialog.get_by_role("button", name=f"Delete issue #{issue['number']}").click()
    page.wait_for_url(re.compile(r"/issues$"))
    assert live.api.get(f"/api/issues/{issue['number']}").status_code == 404

    page.goto(f"/issues/{issue['number']}")  # the 404 page speaks to a browser user
    card = page.locator(".error-card")
    expect(card).to_contain_text(f"Issue '{issue['number']}' not found.")
    expect(card).to_contain_text("It may have been deleted")
    expect(card).not_to_contain_text("predictorx")


def test_a_5_mb_comment_keeps_its_text_and_says_the_limit_in_words(page, live):
    issue = live.post("/api/issues", {"title": "Paste a log"})
    page.goto(f"/issues/{issue['number']}")
    box = page.get_by_label("Comment")
    page.evaluate("""() => { const a = document.getElementById('comment-body');
        a.value = 'x'.repeat(5000000); a.dispatchEvent(new Event('input', {bubbles: true})); }""")
    error = page.locator("[data-comment-error]")
    expect(error).to_have_text("Comments can be at most 100,000 characters; this one has 5,000,000.")
    expect(page.locator("#comment-count")).to_have_text("5,000,000 / 100,000")
    page.get_by_role("button", name="Comment").click()
    assert page.evaluate("document.getElementById('comment-body').value.length") == 5_000_000

    # A page that lets it through (an old tab): the server's 422 never replaces the box either.
    page.evaluate("document.querySelector('form.comment-form').dataset.max = '99999999'")
    page.get_by_role("button", name="Comment").click()
    expect(error).to_contain_text("Not posted: Comments can be at most 100,000 characters; this one has 5,000,000.")
    assert page.evaluate("document.getElementById('comment-body').value.length") == 5_000_000
    assert live.get(f"/api/issues/{issue['number']}")["comments"] == []
    box.fill("short and fine")
    page.get_by_role("button", name="Comment").click()
    expect(page.locator("#comments .comment")).to_contain_text("short and fine")


def test_offline_says_reconnecting_keeps_the_comment_and_catches_up(page, live):
    issue = live.post("/api/issues", {"title": "Go offline", "status": "todo"})
    page.goto(f"/issues/{issue['number']}")
    _connected(page)
    page.context.set_offline(True)
    expect(page.locator("#live-status")).to_have_text("Reconnecting…")
    expect(page.locator("body")).not_to_have_class(LIVE)

    page.get_by_label("Comment").fill("Written on the train")
    page.get_by_role("button", name="Comment").click()
    expect(page.locator("[data-comment-error]")).to_contain_text("Not posted: the server could not be reached")
    expect(page.get_by_label("Comment")).to_have_value("Written on the train")
    page.locator("#issue-priority").select_option("urgent")
    expect(page.locator("#msg-priority")).to_contain_text("Not saved: the server could not be reached")
    expect(page.locator("#issue-priority")).to_have_value("urgent")

    live.api.patch(f"/api/issues/{issue['number']}", json={"status": "in_review"})  # missed while offline
    page.context.set_offline(False)
    _connected(page)
    expect(page.locator("#live-status")).to_be_hidden()
    expect(page.locator("#issue-status")).to_have_value("in_review")  # caught up
    expect(page.locator("#issue-priority")).to_have_value("urgent")  # the unsaved choice stays
    page.locator("#msg-priority").get_by_role("button", name="Try again").click()
    page.wait_for_function(f"fetch('/api/issues/{issue['number']}').then(r => r.json())"
                           ".then(i => i.priority === 'urgent')", polling=200)


class _Server:
    """The app on a fixed port, stopped and started again as a person's server would be."""

    def __init__(self, db, port: int):
        self.db, self.port, self.server, self.thread = db, port, None, None

    def start(self) -> None:
        self.server = uvicorn.Server(uvicorn.Config(create_app(self.db, migrate=False), host="127.0.0.1",
                                                    port=self.port, log_level="warning", access_log=False,
                                                    lifespan="on", timeout_graceful_shutdown=2))
        self.thread = threading.Thread(target=self.server.run, name="px-restart-test-server", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "the test server did not stop"


def test_the_server_stopped_and_restarted_mid_page(browser, live, web_db):
    issue = live.post("/api/issues", {"title": "Restart me", "status": "todo"})
    served = _Server(web_db, free_port())
    served.start()
    url = f"http://127.0.0.1:{served.port}"
    context = browser.new_context(viewport={"width": 1360, "height": 900}, base_url=url)
    try:
        page = context.new_page()
        page.goto(live.login_link().replace(live.url, url))
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda u: "/login" not in u)
        page.goto(f"/issues/{issue['number']}")
        _connected(page)

        served.stop()
        expect(page.locator("#live-status")).to_have_text("Reconnecting…")
        expect(page.locator("body")).not_to_have_class(LIVE)
        page.locator("#issue-status").select_option("done")
        expect(page.locator("#msg-status")).to_contain_text("Not saved")
        expect(page.locator("#issue-status")).to_have_value("done")  # kept, not silently reverted
        page.get_by_label("Comment").fill("Are you there?")
        page.get_by_role("button", name="Comment").click()
        expect(page.locator("[data-comment-error]")).to_contain_text("Not posted")
        expect(page.get_by_label("Comment")).to_have_value("Are you there?")
        with web_db.write() as s:  # changed while the server is down: no event will say so
            s.get(Issue, issue["id"]).priority = "high"

        served.start()
        _connected(page)
        expect(page.locator("#live-status")).to_be_hidden()
        expect(page.locator("#issue-priority")).to_have_value("high")  # caught up on reconnect
        expect(page.locator("#issue-status")).to_have_value("done")  # the unsaved choice stays
        page.locator("#msg-status").get_by_role("button", name="Try again").click()
        expect(page.locator("#issue-status")).to_have_value("done")
        page.get_by_role("button", name="Comment").click()
        expect(page.locator("#comments .comment")).to_contain_text("Are you there?")
        stored = live.get(f"/api/issues/{issue['number']}")
        assert (stored["status"], stored["priority"]) == ("done", "high")
    finally:
        context.close()
        if served.thread is not None and served.thread.is_alive():
            served.stop()


def test_after_sign_in_the_run_waiting_for_review_comes_first(page, live):
    live.register_local_daemon()
    live.post("/api/agents", {"name": "demo-agent", "provider": "claude"})
    issue = live.post("/api/issues", {"title": "Add a greeting", "assignee": "demo-agent"})
    task = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]
    live.daemon(f"/api/daemon/tasks/{task['id']}/status", {"status": "running"})  # the issue is in progress
    live.daemon(f"/api/daemon/tasks/{task['id']}/finish", {"status": "completed", "branch_name": "agent/demo/1"})
    page.goto("/")
    step = page.locator("#next-step")
    expect(step).to_contain_text("A run is waiting for your review")
    expect(step).to_contain_text(f"demo-agent finished #{issue['number']} Add a greeting")
    expect(step).to_contain_text("Next step: read the change, then merge it")
    step.get_by_role("link", name="Review the change").click()
    page.wait_for_url(re.compile(f"/tasks/{task['id']}"))
