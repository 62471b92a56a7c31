"""In Chromium: an ACP agent whose policy is `ask` waits on a person (issue 25 §2). The question
appears on the run's page and in "Waiting for you" live, as the daemon records it; the person
picks an option with a button; the answer is kept on the task for the daemon, and the run leaves
the list. A daemon is played through the daemon API."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

QUESTION = {"event": "permission", "policy": "ask", "waiting": True, "request_id": "q1",
            "tool_call": {"toolCallId": "call-1", "title": "rm -rf build/", "kind": "execute",
                          "rawInput": {"command": "rm -rf build/"}},
            "options": [{"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}


def _asking_run(live) -> str:
    live.register_local_daemon(providers=("acp",))
    live.post("/api/agents", {"name": "gemini", "provider": "acp", "permissions": "ask",
                              "command": ["gemini", "--experimental-acp"]})
    project = live.post("/api/projects", {"title": "Storefront"})
    live.post("/api/issues", {"title": "Clean the build", "project_id": project["id"], "assignee": "gemini"})
    task = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]
    live.daemon(f"/api/daemon/tasks/{task['id']}/status", {"status": "running"})
    return task["id"]


def test_a_question_shows_live_and_a_button_answers_it(page, live):
    task_id = _asking_run(live)
    page.goto("/waiting")
    expect(page.locator("#no-waiting")).to_be_visible()
    page.wait_for_function("document.body.classList.contains('live-on')")

    live.daemon(f"/api/tasks/{task_id}/messages",
                {"messages": [{"seq": 0, "kind": "system", "content": QUESTION}]})
    row = page.locator(f"#waiting-runs tr[data-task-id='{task_id}']")
    expect(row).to_contain_text("rm -rf build/")  # no reload: the question's arrival is an event
    row.get_by_role("link", name="gemini").click()

    question = page.locator("#permission-question")
    expect(question).to_contain_text("Waiting for you")
    expect(question.locator(".ask-input")).to_contain_text('"command": "rm -rf build/"')
    question.get_by_role("button", name="Allow once").click()
    expect(page.locator("#permission-question")).to_have_count(0)
    answers = live.get(f"/api/tasks/{task_id}")["permission_answers"]
    assert answers["q1"]["option_id"] == "allow" and answers["q1"]["by"]

    page.goto("/waiting")
    expect(page.locator("#no-waiting")).to_be_visible()


def test_an_answer_to_a_question_no_longer_asked_says_so(page, live):
    task_id = _asking_run(live)
    live.daemon(f"/api/tasks/{task_id}/messages",
                {"messages": [{"seq": 0, "kind": "system", "content": QUESTION}]})
    page.goto(f"/tasks/{task_id}")
    expect(page.locator("#permission-question")).to_be_visible()
    page.wait_for_function("document.body.classList.contains('live-on')")
    # Meanwhile the agent's wait ended: the daemon answered deny on its own. The header's live
    # refresh is held back until the person has clicked, so the click meets the old question.
    header = f"**/tasks/{task_id}/header"
    page.route(header, lambda route: route.abort())
    live.daemon(f"/api/tasks/{task_id}/messages", {"messages": [{"seq": 1, "kind": "system", "content": {
        "event": "permission_timeout", "request_id": "q1", "choice": "reject"}}]})
    page.locator("#permission-question").get_by_role("button", name="Reject").click()
    refusal = page.locator("#task-header .form-error[role=alert]")
    expect(refusal).to_contain_text("not waiting for an answer")
    assert not (live.get(f"/api/tasks/{task_id}").get("permission_answers") or {})

    # A live refresh landing after the refusal brings the header up to date and keeps the refusal.
    page.unroute(header)
    with page.expect_response(lambda r: r.url.endswith(f"/tasks/{task_id}/header") and r.ok):
        page.evaluate("htmx.trigger(document.getElementById('task-header'), 'px-refresh')")
    expect(page.locator("#permission-question")).to_have_count(0)
    expect(refusal).to_contain_text("not waiting for an answer")
