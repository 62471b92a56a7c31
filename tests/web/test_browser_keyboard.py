"""In Chromium, by keyboard only (focus, type, Enter — no clicks): the main flow of issue 13 §7
(create a project → add a repository → create an issue → assign it → watch the run → review its
diff), and everything of §2 from the browser: agents created, edited and deleted, the board's
moves, a comment with an @mention, project edits, the workspace switcher."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from predictorx.daemon.review import branch_review

pytestmark = pytest.mark.browser


def press(locator, key: str = "Enter") -> None:
    locator.focus()
    locator.press(key)


def test_main_flow_by_keyboard(page, live, branch_repo):
    live.register_local_daemon()
    live.post("/api/agents", {"name": "claude", "provider": "claude"})
    page.goto("/")
    press(page.get_by_role("button", name="New project").first)
    dialog = page.locator("dialog#new-project")
    expect(dialog).to_be_visible()
    page.keyboard.type("Checkout speed")  # the title field has the focus
    press(dialog.get_by_role("button", name="Create project"))
    expect(page.get_by_role("heading", name="Checkout speed")).to_be_visible()

    press(page.get_by_role("button", name="+ Git repository"))
    page.keyboard.type("https://github.com/org/shop")
    page.keyboard.press("Enter")
    expect(page.locator("#resource-list .resource")).to_have_count(1)

    press(page.get_by_role("button", name="+ New issue"))
    page.keyboard.type("Make checkout faster")
    form = page.locator("#new-issue-form")
    form.get_by_label("Assignee").select_option(label="claude · agent")  # a select changes by keyboard too
    press(form.get_by_role("button", name="Create issue"))
    expect(page.locator("#issues .issue-row")).to_have_count(1)
    expect(page.locator("#runs .task-row")).to_have_count(1)

    # Watch: the daemon takes it and finishes with a diff; the run's page shows it live.
    task = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]
    press(page.locator("#runs a.task-link").first)
    expect(page.locator("#task-status [data-status]")).to_have_attribute("data-status", "dispatched")
    repo, base, branch = branch_repo
    review = branch_review(repo, base, branch, mode="worktree", repo_label=str(repo))
    review["head"] = base
    live.daemon(f"/api/daemon/tasks/{task['id']}/finish", {"status": "completed", "branch_name": branch, "review": review})
    expect(page.locator("#task-status [data-status]")).to_have_attribute("data-status", "completed")
    expect(page.locator("#review details.file")).to_have_count(3)
    press(page.locator("#view-split"))
    expect(page.locator("table.diff.split").first).to_be_visible()
    expect(page.locator("#copy-branch")).to_be_visible()


def test_agents_board_comments_project_and_workspaces_from_the_browser(page, live):
    # Agents: create, edit, delete.
    page.goto("/agents")
    press(page.get_by_role("button", name="New agent"))
    form = page.locator("#new-agent")
    page.keyboard.type("coder")
    form.locator("select[name=provider]").select_option("command")
    form.locator("input[name=command]").fill("sh -c 'make fix'")
    form.locator("input[name=max_concurrent_tasks]").fill("3")
    form.locator("textarea[name=instructions]").fill("Keep diffs small.")
    press(form.get_by_role("button", name="Create agent"))
    expect(page.locator("#agents tr[data-agent=coder]")).to_contain_text("command")
    agent = next(a for a in live.get("/api/agents") if a["name"] == "coder")
    assert agent["command"] == ["sh", "-c", "make fix"] and agent["max_concurrent_tasks"] == 3

    press(page.get_by_role("button", name="Edit coder"))
    edit = page.get_by_role("form", name="Edit coder")
    edit.locator("input[name=model]").fill("big-model")
    edit.locator("input[name=name]").fill("coder-2")
    press(edit.get_by_role("button", name="Save"))
    expect(page.locator("#agents tr[data-agent=coder-2]")).to_contain_text("big-model")

    page.once("dialog", lambda d: d.accept())
    press(page.get_by_role("button", name="Delete coder-2"))
    expect(page.locator("#agents tr[data-agent]")).to_have_count(0)
    assert live.get("/api/agents") == []

    # Board: a card moves a column right by keyboard, and keeps the focus.
    live.post("/api/agents", {"name": "claude", "provider": "claude"})
    issue = live.post("/api/issues", {"title": "Fix the login redirect"})
    page.goto("/issues?view=board")
    card = page.locator(f"#c{issue['number']}")
    expect(page.locator("section.column[data-status=todo]")).to_contain_text("Fix the login redirect")
    press(card.get_by_role("button", name="To in progress"))
    expect(page.locator("section.column[data-status=in_progress]")).to_contain_text("Fix the login redirect")
    focused = f"document.activeElement && document.activeElement.closest('#c{issue['number']}')"
    page.wait_for_function(f"{focused} && document.activeElement.getAttribute('aria-label') === 'To in review'")
    page.keyboard.press("Enter")  # the focused → again: in review
    expect(page.locator("section.column[data-status=in_review]")).to_contain_text("Fix the login redirect")
    page.wait_for_function(f"{focused} && document.activeElement.getAttribute('aria-label') === 'To done'")
    page.keyboard.press("Shift+Tab")  # ← of the same card: back to in progress
    page.keyboard.press("Enter")
    expect(page.locator("section.column[data-status=in_progress]")).to_contain_text("Fix the login redirect")
    page.wait_for_function(f"{focused} && document.activeElement.getAttribute('aria-label') === 'To todo'")
    assert live.get(f"/api/issues/{issue['number']}")["status"] == "in_progress"

    # A comment with an @mention, rendered as Markdown with the mention marked.
    page.goto(f"/issues/{issue['number']}")
    page.locator("#comment-body").focus()
    page.keyboard.type("Please have a look, @claude — **soon**.")
    press(page.get_by_role("button", name="Comment"))
    expect(page.locator(".comment .mention")).to_have_text("@claude")
    expect(page.locator(".comment strong")).to_have_text("soon")

    # Project edits: title, description, status, lead.
    project = live.post("/api/projects", {"title": "Old title"})
    page.goto(f"/projects/{project['id']}")
    press(page.get_by_role("button", name="Edit project"))
    edit = page.get_by_role("form", name="Edit project")
    edit.get_by_label("Title").fill("New title")
    edit.get_by_label("Description").fill("What it is for.")
    edit.get_by_label("Status").select_option("in_progress")
    edit.get_by_label("Lead").select_option(index=1)
    press(edit.get_by_role("button", name="Save"))
    expect(page.get_by_role("heading", name="New title")).to_be_visible()
    saved = live.get(f"/api/projects/{project['id']}")
    assert saved["title"] == "New title" and saved["description"] == "What it is for."
    assert saved["status"] == "in_progress" and saved["lead_id"]

    # The workspace switcher appears with a second workspace and moves every page there.
    live.post("/api/workspaces", {"name": "Second team"})
    page.goto("/")
    page.locator("#ws-select").select_option(label="Second team")
    press(page.locator("#ws-switch"))
    expect(page.locator(".ws-name")).to_have_text("Second team")
    page.goto("/issues")
    expect(page.locator("#issues")).to_have_count(0)  # the other workspace's issues are not here
