"""In Chromium: the Agents page's sandbox box (the API's and CLI's `--sandbox`), and an agent with
runs archived instead of deleted — its runs keep their history and its name (issue 13 §2)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _agent(live, name: str) -> dict:
    return next(a for a in live.get("/api/agents") if a["name"] == name)


def test_the_sandbox_box_creates_and_edits_a_sandboxed_agent(page, live, axe):
    page.goto("/agents")
    page.locator("#new-agent-button").click()
    form = page.locator("#new-agent")
    form.get_by_label("Name").fill("boxed")
    box = form.get_by_label("Run in the sandbox")
    expect(box).to_be_checked()  # the default (issue 29)
    expect(form).to_contain_text("Unticked: without the sandbox the agent runs as the daemon's user")
    expect(form).to_contain_text("config.json with its token")
    box.focus()
    page.keyboard.press("Space")  # by keyboard: off, and on again
    expect(box).not_to_be_checked()
    page.keyboard.press("Space")
    form.get_by_role("button", name="Create agent").click()
    expect(page.locator("#agents tr[data-agent=boxed]")).to_contain_text("sandboxed")
    assert _agent(live, "boxed")["sandbox"] is True
    assert not axe(page)

    page.get_by_role("button", name="Edit boxed").click()
    edit = page.get_by_role("form", name="Edit boxed")
    expect(edit.get_by_label("Run in the sandbox")).to_be_checked()
    edit.get_by_label("Run in the sandbox").uncheck()
    edit.get_by_role("button", name="Save").click()
    expect(page.locator("#agents tr[data-agent=boxed]")).not_to_contain_text("sandboxed")
    expect(page.locator("#agents tr[data-agent=boxed]")).to_contain_text("unconfined")
    assert _agent(live, "boxed")["sandbox"] is False


def test_the_network_policy_is_set_from_the_form_and_an_allowlist_without_the_sandbox_is_refused(page, live, axe):
    page.goto("/agents")
    page.locator("#new-agent-button").click()
    form = page.locator("#new-agent")
    form.get_by_label("Name").fill("fenced")
    form.get_by_label("Run in the sandbox").uncheck()  # on by default (issue 29)
    form.get_by_label("Network").select_option("allowlist")
    form.get_by_label("Allowed hosts").fill("api.anthropic.com\n127.0.0.1:8080")
    form.get_by_role("button", name="Create agent").click()
    expect(page.locator("#new-agent")).to_contain_text("needs the sandbox")
    assert not any(a["name"] == "fenced" for a in live.get("/api/agents"))
    form = page.locator("#new-agent")
    form.get_by_label("Run in the sandbox").check()
    form.get_by_role("button", name="Create agent").click()
    expect(page.locator("#agents tr[data-agent=fenced]")).to_contain_text("allowlist")
    agent = _agent(live, "fenced")
    assert agent["network"] == "allowlist" and agent["allow_hosts"] == ["api.anthropic.com:443", "127.0.0.1:8080"]
    assert not axe(page)
    page.get_by_role("button", name="Edit fenced").click()
    edit = page.get_by_role("form", name="Edit fenced")
    expect(edit.get_by_label("Allowed hosts")).to_have_value("api.anthropic.com:443\n127.0.0.1:8080")
    edit.get_by_label("Network").select_option("open")
    edit.get_by_label("Allowed hosts").fill("")
    edit.get_by_role("button", name="Save").click()
    expect(page.locator("#agents tr[data-agent=fenced]")).not_to_contain_text("allowlist")
    assert _agent(live, "fenced")["network"] == "open"


def test_an_agent_with_runs_is_archived_and_its_runs_keep_their_history(page, live, axe):
    live.register_local_daemon(providers=("command",))
    live.post("/api/agents", {"name": "bot", "provider": "command", "command": ["true"]})
    live.post("/api/agents", {"name": "spare", "provider": "claude"})
    issue = live.post("/api/issues", {"title": "Fix the total", "assignee": "bot"})
    task = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]
    live.daemon(f"/api/tasks/{task['id']}/messages", {"messages": [
        {"seq": 0, "kind": "text", "content": {"text": "Fixed the total."}}]})
    live.daemon(f"/api/daemon/tasks/{task['id']}/finish", {"status": "completed"})

    page.goto("/agents")
    # One with runs offers Archive (never Delete); one that never ran offers Delete.
    expect(page.get_by_role("button", name="Delete bot")).to_have_count(0)
    expect(page.get_by_role("button", name="Archive spare")).to_have_count(0)
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Archive bot").click()
    expect(page.locator("#agents tr[data-agent=bot]")).to_have_count(0)
    archived = page.locator("#archived-agents")
    archived.locator("summary").click()
    expect(archived.locator("[data-archived-agent=bot]")).to_contain_text("1 run")
    assert not axe(page)

    # Its run keeps its messages and its name; it is no longer offered for assignment.
    page.goto(f"/tasks/{task['id']}")
    expect(page.locator("#messages")).to_contain_text("Fixed the total.")
    expect(page.locator("#task-header")).to_contain_text("bot")
    expect(page.locator("#agent-archived")).to_contain_text("bot is archived")
    expect(page.locator("#rerun-task")).to_have_count(0)
    page.goto(f"/issues/{issue['number']}")
    expect(page.locator("select[name=assignee] option", has_text="bot")).to_have_count(0)

    page.goto("/agents")
    page.locator("#archived-agents summary").click()
    page.get_by_role("button", name="Restore bot").click()
    expect(page.locator("#agents tr[data-agent=bot]")).to_have_count(1)


def test_the_form_offers_what_your_daemons_can_run_and_a_stuck_task_says_why(page, live, axe):
    """Issue 26 §2: the only daemon offers `command`, so the form preselects it and shows claude
    disabled with how to install it; an agent none of whose daemons is online is marked, and its
    queued task says which daemon is missing."""
    live.register_local_daemon(providers=("command",))
    live.post("/api/agents", {"name": "needs-gemini", "provider": "gemini"})
    issue = live.post("/api/issues", {"title": "Never starts", "assignee": "needs-gemini"})
    page.goto("/agents")
    page.locator("#new-agent-button").click()
    form = page.locator("#new-agent")
    provider = form.locator("select[name=provider]")
    expect(provider).to_have_value("command")
    expect(form.locator("option[value=claude]")).to_be_disabled()
    expect(form.locator("option[value=claude]")).to_contain_text("not on your daemons")
    expect(form.locator("#provider-why")).to_contain_text("npm install -g @anthropic-ai/claude-code")
    expect(form.locator("#provider-why")).not_to_contain_text("No daemon of yours is online")
    row = page.locator("#agents tr[data-agent=needs-gemini]")
    expect(row).to_contain_text("cannot run now")
    expect(row).to_contain_text("npm install -g @google/gemini-cli")
    assert not axe(page)
    task = live.get(f"/api/issues/{issue['number']}/runs")[0]
    page.goto(f"/tasks/{task['id']}")
    expect(page.locator("#wait-reason")).to_contain_text("Not started.")
    expect(page.locator("#wait-reason")).to_contain_text("has gemini")
    page.goto(f"/issues/{issue['number']}")
    expect(page.locator(f"li[data-task-id='{task['id']}'] .reason.wait")).to_contain_text("has gemini")
