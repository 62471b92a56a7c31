"""In Chromium: the inbox page and the sidebar's unread count (issue 27 §3). A run that fails and an
agent's permission question arrive live (no reload): in the list and in the count; "Mark read"
lowers the count, "Done" takes the item out of the open list, the answered question settles by
itself; the page passes axe-core. A daemon is played through the daemon API."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

QUESTION = {"event": "permission", "policy": "ask", "waiting": True, "request_id": "q1",
            "tool_call": {"toolCallId": "call-1", "title": "rm -rf build/", "kind": "execute",
                          "rawInput": {"command": "rm -rf build/"}},
            "options": [{"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}


def _failing_run(live) -> str:
    live.post("/api/agents", {"name": "breaker", "provider": "command", "command": ["false"]})
    live.post("/api/issues", {"title": "Break the build", "assignee": "breaker"})
    task = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]
    live.daemon(f"/api/daemon/tasks/{task['id']}/status", {"status": "running"})
    return task["id"]


def test_items_arrive_live_in_the_list_and_the_count_and_leave_when_done(page, live, axe):
    live.register_local_daemon(providers=("command", "acp"))
    task_id = _failing_run(live)
    page.goto("/inbox")
    expect(page.locator("#inbox-empty")).to_be_visible()
    count = page.locator("#inbox-count")
    expect(count).to_have_text("")
    page.wait_for_function("document.body.classList.contains('live-on')")
    assert axe(page) == []

    live.daemon(f"/api/daemon/tasks/{task_id}/finish", {"status": "failed", "failure_reason": "exit code 1"})
    item = page.locator("#inbox-items li.inbox-item[data-kind='run_failed']")
    expect(item).to_contain_text("breaker's run on #1 failed: Break the build")  # no reload
    expect(count).to_have_text("1 unread")
    expect(item.get_by_role("link")).to_have_attribute("href", f"/tasks/{task_id}")

    # an agent asks a question: a second item, the count 2; answered, it settles by itself
    live.post("/api/agents", {"name": "gemini", "provider": "acp", "permissions": "ask",
                              "command": ["gemini", "--experimental-acp"]})
    live.post("/api/issues", {"title": "Clean the build", "assignee": "gemini"})
    asking = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]["id"]
    live.daemon(f"/api/daemon/tasks/{asking}/status", {"status": "running"})
    live.daemon(f"/api/tasks/{asking}/messages", {"messages": [{"seq": 0, "kind": "system", "content": QUESTION}]})
    question = page.locator("#inbox-items li.inbox-item[data-kind='permission']")
    expect(question).to_contain_text("gemini asks you on #2: rm -rf build/")
    expect(count).to_have_text("2 unread")
    live.post(f"/api/tasks/{asking}/answer", {"option_id": "allow"})
    expect(question).to_have_count(0)
    expect(count).to_have_text("1 unread")

    item.get_by_role("button", name="Mark read").click()
    expect(count).to_have_text("")
    expect(page.locator("#inbox-items li.inbox-item[data-kind='run_failed']")).not_to_have_class("is-unread")
    page.locator("#inbox-items li.inbox-item[data-kind='run_failed']").get_by_role("button", name="Done").click()
    expect(page.locator("#inbox-items li.inbox-item")).to_have_count(0)
    page.get_by_role("link", name="done", exact=True).click()
    expect(page.locator("#inbox-items li.inbox-item[data-kind='run_failed']")).to_have_count(1)
    expect(page.get_by_role("link", name="Inbox")).to_be_visible()


def test_the_sidebar_count_is_live_on_a_page_without_live_parts_of_its_own(page, live):
    """/agents holds no live list: the count in its sidebar still goes up when a run fails."""
    live.register_local_daemon(providers=("command", "acp"))
    task_id = _failing_run(live)
    page.goto("/agents")
    assert page.locator("[data-live]").count() == 0
    count = page.locator("#inbox-count")
    expect(count).to_have_text("")
    page.wait_for_function("document.body.classList.contains('live-on')")
    live.daemon(f"/api/daemon/tasks/{task_id}/finish", {"status": "failed", "failure_reason": "exit code 1"})
    expect(count).to_contain_text("1 unread")  # no reload
