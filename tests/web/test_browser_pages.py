"""Settings, the runs, agent and daemon pages, and the Workflows panel's start and stop, in
Chromium (issue 26 §5–7): each action done the way a person does it, and axe-core finding no
serious or critical violation in the light and the dark theme, wide and at 390 px."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _axe_everywhere(page, axe) -> list[str]:
    """axe's findings in both themes, at the desktop size and at a phone's 390 px, and a main
column wider than its box."""
    found = []
    for width, height in ((1360, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            found += [f"{width}px {scheme}: {v}" for v in axe(page)]
        # tables and long values scroll inside their own box: the page's main column never does
        overflow = page.evaluate("() => { const m = document.querySelector('main');"
                                 " return m.scrollWidth - m.clientWidth; }")
        if overflow > 1:
            found.append(f"{width}px: the main column is {overflow} px wider than its box")
    page.set_viewport_size({"width": 1360, "height": 900})
    page.emulate_media(color_scheme="light")
    return found


def test_settings_rename_invite_role_remove_and_tokens(page, live, axe):
    page.on("dialog", lambda d: d.accept())  # the confirm before a removal or a revocation
    page.goto("/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Workspace and members").click()
    page.wait_for_url(re.compile(r"/settings$"))
    for name in ("Forges", "Budgets", "Notifications", "Audit log"):
        expect(page.get_by_role("navigation", name="More settings").get_by_role("link", name=name)).to_be_visible()
    assert not (found := _axe_everywhere(page, axe)), "\n".join(found)

    page.get_by_label("Name", exact=True).first.fill("Shop team")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator("#settings-panel [role=status]")).to_have_text("Workspace renamed.")
    assert live.get("/api/workspaces")[0]["name"] == "Shop team"

    page.get_by_role("button", name="Invite").click()
    invite = page.get_by_role("form", name="Invite a person")
    invite.get_by_label("Name").fill("nina")
    invite.get_by_label("Role").select_option("admin")
    invite.get_by_role("button", name="Add member").click()
    shown = page.locator("#shown-token")
    expect(shown).to_be_visible()
    nina_token = shown.input_value()
    assert live.api.get("/api/me", headers={"Authorization": f"Bearer {nina_token}"}).json()["user"]["name"] == "nina"
    row = page.locator('tr[data-member="nina"]')
    expect(row.locator(".member-role")).to_have_text("admin")
    assert not (found := _axe_everywhere(page, axe)), "\n".join(found)

    row.get_by_label("New role for nina").select_option("member")
    row.get_by_role("button", name="Change role of nina").click()
    expect(page.locator('tr[data-member="nina"] .member-role')).to_have_text("member")
    page.locator('tr[data-member="nina"]').get_by_role("button", name="Remove nina").click()
    expect(page.locator('tr[data-member="nina"]')).to_have_count(0)
    assert live.api.get("/api/me", headers={"Authorization": f"Bearer {nina_token}"}).status_code == 401

    page.get_by_role("button", name="New token").click()
    form = page.get_by_role("form", name="New token")
    form.get_by_label("Name").fill("laptop CLI")
    form.get_by_role("button", name="Create token").click()
    expect(page.locator("#shown-token")).to_be_visible()
    raw = page.locator("#shown-token").input_value()
    assert live.api.get("/api/me", headers={"Authorization": f"Bearer {raw}"}).status_code == 200
    page.locator('tr[data-token="laptop CLI"]').get_by_role("button", name="Revoke laptop CLI").click()
    expect(page.locator('tr[data-token="laptop CLI"]')).to_have_count(0)
    assert live.api.get("/api/me", headers={"Authorization": f"Bearer {raw}"}).status_code == 401


def _runs(live) -> dict:
    """A daemon with two runtimes; agent `bot` with one run going and one failed."""
    daemon_id = str(uuid.uuid4())
    daemon = live.post("/api/daemon/register", {"daemon_id": daemon_id, "name": "box", "runtimes": [
        {"provider": "command", "version": "1.0"}, {"provider": "claude", "version": "2.0"}]})
    live.daemon_token = daemon["token"]
    agent = live.post("/api/agents", {"name": "bot", "provider": "command", "command": ["true"],
                                      "max_concurrent_tasks": 2})
    issues = [live.post("/api/issues", {"title": title, "assignee": "bot"})["id"] for title in ("Runs now", "Breaks")]
    claimed = {c["task"]["issue_id"]: c["task"]["id"] for c in live.daemon("/api/daemon/claim", {"limit": 2})["tasks"]}
    ids = [claimed[i] for i in issues]
    for task_id in ids:
        live.daemon(f"/api/daemon/tasks/{task_id}/status", {"status": "running"})
    live.daemon(f"/api/daemon/tasks/{ids[1]}/finish", {"status": "failed", "failure_reason": "tests failed"})
    return {"daemon": daemon_id, "agent": agent["id"], "running": ids[0], "failed": ids[1]}


def test_runs_agent_and_daemon_pages_are_reached_by_clicking(page, live, axe):
    world = _runs(live)
    page.goto("/agents")
    page.locator("#agents").get_by_role("link", name="bot", exact=True).click()
    page.wait_for_url(re.compile(rf"/agents/{world['agent']}$"))
    expect(page.locator("#agent-sandbox")).to_contain_text("sandboxed")
    expect(page.locator("tr[data-task-id]")).to_have_count(2)
    page.get_by_role("navigation", name="Show runs").get_by_role("link", name="Failed").click()
    expect(page.locator("tr[data-task-id]")).to_have_count(1)
    expect(page.locator(f'tr[data-task-id="{world["failed"]}"]')).to_contain_text("tests failed")
    assert not (found := _axe_everywhere(page, axe)), "\n".join(found)

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Runs").click()
    page.wait_for_url(re.compile(r"/runs$"))
    page.get_by_role("navigation", name="Show runs").get_by_role("link", name="Running").click()
    expect(page.locator("tr[data-task-id]")).to_have_count(1)
    expect(page.locator(f'tr[data-task-id="{world["running"]}"]')).to_be_visible()
    assert not (found := _axe_everywhere(page, axe)), "\n".join(found)

    page.goto("/daemons")
    page.locator("#daemons").get_by_role("link", name="box", exact=True).click()
    page.wait_for_url(re.compile(rf"/daemons/{world['daemon']}$"))
    expect(page.locator("#runtimes tr[data-provider]")).to_have_count(2)
    current = page.locator("section", has=page.locator("#current-h"))
    expect(current.locator("tr[data-task-id]")).to_have_count(1)
    current.get_by_role("link", name=world["running"][:8]).click()
    page.wait_for_url(re.compile(rf"/tasks/{world['running']}$"))
    page.go_back()
    assert not (found := _axe_everywhere(page, axe)), "\n".join(found)


def test_an_auto_started_workflow_is_stopped_and_another_started_from_the_issue_page(page, live, axe):
    n = live.post("/api/issues", {"title": "The export crashes on empty files"})["number"]
    page.goto(f"/issues/{n}")
    section = page.locator('#workflows section.workflow[data-process="bug-triage"]')
    expect(section.locator(".auto-started")).to_contain_text("Started automatically")
    assert not (found := _axe_everywhere(page, axe)), "\n".join(found)
    stop = page.get_by_role("form", name="Stop Bug triage: small fix or redesign")
    stop.get_by_label("Why (kept in the record)").fill("not a bug: the file was empty on purpose")
    stop.get_by_role("button", name="Stop workflow").click()
    expect(section.locator(".wf-status")).to_have_text("stopped")
    expect(section.locator(".stopped-note")).to_contain_text("the file was empty on purpose")
    assert live.get(f"/api/issues/{n}/workflows/bug-triage")["status"] == "stopped"

    start = page.get_by_role("form", name="Start a workflow")
    start.get_by_label("Start a workflow").select_option("information-request")
    start.get_by_role("button", name="Start").click()
    expect(page.locator('#workflows section.workflow[data-process="information-request"]')).to_be_visible()
    assert not (found := _axe_everywhere(page, axe)), "\n".join(found)
