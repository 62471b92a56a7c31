"""The quality bar of issue 13 §7 in Chromium: every page passes axe-core (pinned from npm) with
no serious or critical violation, in the light and in the dark theme (which follow the system
setting), and stays under 100 KB of HTML + JS + CSS."""

from __future__ import annotations

import re
import pytest

from predictorx.daemon.review import branch_review

from page_weight import PAGE_BUDGET, page_weight

pytestmark = pytest.mark.browser


def _world(live, branch_repo) -> dict[str, str]:
    """One of everything a page shows: a project with resources, issues, a finished run with a diff."""
    live.register_local_daemon()
    agent = live.post("/api/agents", {"name": "claude", "provider": "claude"})
    assert live.api.put(f"/api/agents/{agent['id']}/env/API_KEY", json={"value": "sk-quality-0123456789"},
                        headers={"Authorization": f"Bearer {live.token}"}).status_code == 200
    project = live.post("/api/projects", {"title": "Storefront", "description": "The shop.",
                                          "resources": [{"resource_type": "github_repo",
                                                         "resource_ref": {"url": "https://github.com/org/shop"}}]})
    for title in ("Fix the login redirect", "Add tax", "Write the docs"):
        live.post("/api/issues", {"title": title, "project_id": project["id"]})
    issue = live.post("/api/issues", {"title": "Make checkout faster", "project_id": project["id"], "assignee": "claude"})
    live.post(f"/api/issues/{issue['number']}/comments", {"body": "Please keep **the API** stable, @claude."})
    task = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]
    live.daemon(f"/api/tasks/{task['id']}/messages", {"messages": [
        {"seq": 0, "kind": "system", "content": {"event": "init", "model": "sonnet"}},
        {"seq": 1, "kind": "text", "content": {"text": "Looking at `checkout.py`.\n\n- one\n- two"}},
        {"seq": 2, "kind": "tool_use", "content": {"id": "t", "name": "Bash", "input": {"command": "pytest -q"}}},
        {"seq": 3, "kind": "tool_result", "content": {"tool_use_id": "t", "output": "3 passed", "is_error": False}},
        {"seq": 4, "kind": "thinking", "content": {"text": "Done."}}]})
    repo, base, branch = branch_repo
    review = branch_review(repo, base, branch, mode="worktree", repo_label=str(repo))
    review["head"] = base
    live.daemon(f"/api/daemon/tasks/{task['id']}/finish", {"status": "completed", "branch_name": branch, "review": review,
                                                           "usage": {"model": "claude-sonnet-4-5", "input_tokens": 900,
                                                                     "output_tokens": 90, "cost_usd": 0.02}})
    live.post("/api/budgets", {"scope": "workspace", "period": "month", "metric": "cost", "limit": 50, "action": "stop"})
    autopilot = live.post("/api/autopilots", {"name": "nightly", "title": "Nightly {{date}}", "cron": "0 3 * * *",
                                              "webhook": True, "assignee": "claude"})
    live.post(f"/api/autopilots/{autopilot['id']}/fire")
    live.post(f"/api/autopilots/{autopilot['id']}/pause")
    live.post("/api/autopilots", {"name": "weekly", "title": "Weekly", "cron": "0 9 * * 1"})
    return {"projects": "/", "project": f"/projects/{project['id']}", "issues": "/issues",
            "board": "/issues?view=board", "issue": f"/issues/{issue['number']}", "task": f"/tasks/{task['id']}",
            "split diff": f"/tasks/{task['id']}?view=split", "agents": "/agents", "daemons": "/daemons",
            "agent secrets": f"/agents/{agent['id']}/env", "audit log": "/audit", "usage": "/usage",
            "autopilots": "/autopilots", "autopilot": f"/autopilots/{autopilot['id']}", "not found": "/nowhere",
            "inbox": "/inbox", "budgets": "/budgets", "notifications": "/notifications"}


def _weight(live, path: str) -> int:
    """Bytes of the page's HTML plus the scripts and styles it loads, as sent (tests/web/weight.py)."""
    return page_weight(live.api.get, path, cookies={"px_token": live.token})


def test_every_page_passes_axe_in_both_themes_and_stays_small(page, live, branch_repo, axe):
    pages = _world(live, branch_repo)
    problems: dict[str, list[str]] = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for name, path in pages.items():
            page.goto(path)
            found = axe(page)
            if found:
                problems[f"{name} ({scheme})"] = found
    # The sign-in page, signed out.
    page.context.clear_cookies()
    page.goto("/login")
    if found := axe(page):
        problems["sign in"] = found
    assert not problems, "\n".join(f"{k}: {v}" for k, v in problems.items())

    weights = {name: _weight(live, path) for name, path in pages.items()}
    assert all(w < PAGE_BUDGET for w in weights.values()), {n: w for n, w in weights.items() if w >= PAGE_BUDGET}


def test_the_theme_follows_the_system_setting(page, live):
    page.goto("/")
    page.emulate_media(color_scheme="light")
    light = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    page.emulate_media(color_scheme="dark")
    dark = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert light != dark
    assert sum(map(int, re.findall(r"\d+", dark)[:3])) < sum(map(int, re.findall(r"\d+", light)[:3]))
