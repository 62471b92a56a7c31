"""In Chromium: runs live on the project page and a run's details page — messages in order by
kind, live updates from /api/events, waiting_local_directory with its reason, the copyable
branch, cancel (R-WEB-1, R-LD-4, R-WT-3). A daemon is played through the daemon API."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _claimed_task(live) -> dict:
    """A project with an issue assigned to an agent, claimed by a registered daemon."""
    live.register_local_daemon()
    live.post("/api/agents", {"name": "claude", "provider": "claude"})
    project = live.post("/api/projects", {"title": "Storefront"})
    issue = live.post("/api/issues", {"title": "Fix the login redirect", "project_id": project["id"],
                                      "assignee": "claude"})
    task = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]
    return {"project": project, "issue": issue, "task": task}


def _messages(live, task_id: str, *items: tuple[int, str, dict]) -> None:
    live.daemon(f"/api/tasks/{task_id}/messages",
                {"messages": [{"seq": seq, "kind": kind, "content": content} for seq, kind, content in items]})


def test_run_details_show_messages_in_order_and_update_live(page, live):
    run = _claimed_task(live)
    task_id = run["task"]["id"]
    _messages(live, task_id,
              (0, "system", {"event": "session_start", "model": "sonnet"}),
              (1, "thinking", {"text": "The redirect drops the next parameter."}),
              (2, "text", {"text": "Looking at the login handler."}))
    page.goto(f"/tasks/{task_id}")
    messages = page.locator("#messages > li")
    expect(messages).to_have_count(3)
    assert messages.evaluate_all("els => els.map(e => e.dataset.kind)") == ["system", "thinking", "text"]
    thinking = page.locator("li.msg-thinking details")
    expect(thinking).not_to_have_attribute("open", "")
    expect(thinking.get_by_text("drops the next parameter")).to_be_hidden()
    expect(page.locator("#task-status")).to_contain_text("dispatched")
    page.wait_for_function("document.body.classList.contains('live-on')")

    # Posted by the daemon while the page is open: they appear after the others, in order, and
    # a batch the daemon retries is not shown twice.
    _messages(live, task_id, (3, "tool_use", {"id": "t1", "name": "Bash", "input": {"command": "grep -rn next src/"}}))
    batch = [(4, "tool_result", {"tool_use_id": "t1", "output": "src/login.py:12", "is_error": False}),
             (5, "error", {"message": "rate limited, retrying"})]
    _messages(live, task_id, *batch)
    _messages(live, task_id, *batch)
    expect(messages).to_have_count(6)
    assert messages.evaluate_all("els => els.map(e => Number(e.dataset.seq))") == [0, 1, 2, 3, 4, 5]
    assert messages.evaluate_all("els => els.map(e => e.dataset.kind)") == [
        "system", "thinking", "text", "tool_use", "tool_result", "error"]
    expect(page.locator("li.msg-tool_use .tool-name").first).to_have_text("Bash")
    expect(page.locator("li.msg-tool_use")).to_contain_text("grep -rn next src/")
    expect(page.locator("li.msg-error")).to_contain_text("rate limited")

    # The run waits for the local folder, then runs on a branch; the header follows live.
    live.daemon(f"/api/daemon/tasks/{task_id}/status", {
        "status": "waiting_local_directory", "wait_reason": "“main checkout” is in use by run 1234abcd"})
    expect(page.locator("#task-status [data-status]")).to_have_attribute("data-status", "waiting_local_directory")
    expect(page.locator("#wait-reason")).to_contain_text("“main checkout” is in use by run 1234abcd")

    branch = f"agent/claude/{task_id[:8]}"
    live.daemon(f"/api/daemon/tasks/{task_id}/status", {"status": "running", "branch_name": branch})
    expect(page.locator("#task-status [data-status]")).to_have_attribute("data-status", "running")
    expect(page.locator("#wait-reason")).to_have_count(0)
    copy = page.locator("#copy-branch")
    expect(copy).to_have_attribute("data-copy", branch)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.url)
    copy.click()
    expect(copy).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == branch

    page.once("dialog", lambda d: d.accept())
    page.locator("#cancel-task").click()
    expect(page.locator("#task-status [data-status]")).to_have_attribute("data-status", "cancelled")
    expect(page.locator("#cancel-task")).to_have_count(0)
    expect(page.locator("#failure-reason")).to_contain_text("cancelled by a user")
    assert live.get(f"/api/tasks/{task_id}")["status"] == "cancelled"


def test_project_page_runs_follow_the_task_live(page, live):
    live.register_local_daemon()
    live.post("/api/agents", {"name": "codex", "provider": "claude"})
    project = live.post("/api/projects", {"title": "Storefront"})
    page.goto(f"/projects/{project['id']}")
    page.wait_for_function("document.body.classList.contains('live-on')")

    issues = page.locator("#issues")
    issues.get_by_role("button", name="+ New issue").click()
    issues.get_by_label("Issue title").fill("Speed up checkout")
    issues.locator("#new-issue-form select[name=assignee]").select_option(label="codex · agent")
    issues.get_by_role("button", name="Create issue").click()
    expect(issues.locator(".issue-row")).to_contain_text("Speed up checkout")
    runs = page.locator("#runs")
    expect(runs.locator("[data-status]")).to_have_attribute("data-status", "queued")

    task = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]
    live.daemon(f"/api/daemon/tasks/{task['id']}/status", {
        "status": "waiting_local_directory", "wait_reason": "waiting for “main checkout”, used by run 9f8e7d6c"})
    expect(runs.locator("[data-status]")).to_have_attribute("data-status", "waiting_local_directory")
    expect(runs).to_contain_text("waiting for “main checkout”, used by run 9f8e7d6c")

    # An existing issue assigned from its row queues a run too.
    second = live.post("/api/issues", {"title": "Tidy the cart", "project_id": project["id"]})
    page.reload()
    row = page.locator(f".issue-row[data-issue='{second['number']}']")
    row.locator("select[name=assignee]").select_option(label="codex · agent")
    row.get_by_role("button", name="Assign").click()
    expect(runs.locator(".task-row")).to_have_count(2)
    assert {t["issue_number"] for t in live.get("/api/tasks")} == {task["issue_number"], second["number"]}


def test_issue_page_comments_assign_and_runs(page, live):
    live.post("/api/agents", {"name": "claude", "provider": "claude"})
    issue = live.post("/api/issues", {"title": "Write the changelog", "body": "For 2.0 <b>bold</b>"})
    page.goto(f"/issues/{issue['number']}")
    expect(page.locator("#issue-description").get_by_text("For 2.0 <b>bold</b>")).to_be_visible()  # text, never HTML
    page.get_by_label("Comment").fill("Please include the API changes.")
    page.get_by_role("button", name="Comment").click()
    expect(page.locator("#comments .comment")).to_contain_text("Please include the API changes.")
    page.locator("#issue-meta select[name=assignee]").select_option(label="claude · agent")  # saves on its own
    expect(page.locator("#runs [data-status]")).to_have_attribute("data-status", "queued")
    page.locator("#issue-status").select_option("in_review")
    expect(page.locator("#issue-status")).to_have_value("in_review")
    page.wait_for_function(f"fetch('/api/issues/{issue['number']}').then(r => r.json())"
                           ".then(i => i.status === 'in_review')", polling=100)


def test_a_folded_output_opens_whole_and_earlier_messages_load_in_batches(page, live):
    task_id = _claimed_task(live)["task"]["id"]
    long_output = "\n".join(f"output line {i}" for i in range(200))
    items = [(i, "text", {"text": f"message {i}"}) for i in range(160)]
    items.append((160, "tool_result", {"tool_use_id": "t", "output": long_output, "is_error": False}))
    _messages(live, task_id, *items)
    page.goto(f"/tasks/{task_id}")
    result = page.locator("li.msg-tool_result details")
    expect(result).not_to_have_attribute("open", "")
    result.locator("summary").focus()
    page.keyboard.press("Enter")  # opened by keyboard: the whole output arrives
    expect(result.locator("pre")).to_contain_text("output line 199")
    expect(result.locator("pre")).to_have_count(1)

    messages = page.locator("#messages li[data-seq]")
    expect(messages).to_have_count(50)
    page.get_by_role("button", name="Show earlier messages").click()
    expect(messages).to_have_count(150)
    page.get_by_role("button", name="Show earlier messages").click()
    expect(messages).to_have_count(161)
    expect(page.get_by_role("button", name="Show earlier messages")).to_have_count(0)
    assert messages.evaluate_all("els => els.map(e => Number(e.dataset.seq))") == list(range(161))
