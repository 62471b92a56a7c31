"""The runs, agent and daemon pages over HTTP (issue 26 §6): the workspace's runs filtered to
running, waiting and failed ones a page at a time; an agent's page with its settings and its runs
(status, duration, cost where reported); a daemon's page with its runtimes and current runs; the
agents and daemons lists link to them."""

from __future__ import annotations

import re
import uuid

import pytest

from predictorx.service import runlists

from page_weight import PAGE_BUDGET, page_weight


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def world(client, token) -> dict:
    """A daemon with two runtimes and four runs of agent `bot`: running, failed, completed (with
    its cost), and one still queued."""
    owner = _bearer(token)
    daemon_id = str(uuid.uuid4())
    daemon = client.post("/api/daemon/register", headers=owner, json={
        "daemon_id": daemon_id, "name": "box", "hostname": "box.local",
        "runtimes": [{"provider": "command", "version": "1.0"}, {"provider": "claude", "version": "2.0"}]}).json()
    as_daemon = _bearer(daemon["token"])
    agent = client.post("/api/agents", headers=owner, json={"name": "bot", "provider": "command", "command": ["true"],
                                                           "max_concurrent_tasks": 3}).json()
    titles = ["Runs now", "Breaks", "Done fine", "Still queued"]
    numbers = [client.post("/api/issues", headers=owner, json={"title": t, "assignee": "bot"}).json()["number"]
               for t in titles]
    claimed = client.post("/api/daemon/claim", headers=as_daemon, json={"limit": 3}).json()["tasks"]
    by_issue = {c["task"]["issue_id"]: c["task"]["id"] for c in claimed}
    tasks = {}
    for n, t in zip(numbers, titles):
        issue = client.get(f"/api/issues/{n}", headers=owner).json()
        tasks[t] = by_issue.get(issue["id"]) or client.get(f"/api/issues/{n}/runs", headers=owner).json()[0]["id"]
    assert len(claimed) == 3 and tasks["Still queued"] not in by_issue.values()
    for t in ("Runs now", "Breaks", "Done fine"):
        assert client.post(f"/api/daemon/tasks/{tasks[t]}/status", headers=as_daemon,
                           json={"status": "running"}).status_code == 200
    assert client.post(f"/api/daemon/tasks/{tasks['Breaks']}/finish", headers=as_daemon, json={
        "status": "failed", "failure_reason": "the tests did not pass"}).status_code == 200
    assert client.post(f"/api/daemon/tasks/{tasks['Done fine']}/finish", headers=as_daemon, json={
        "status": "completed", "result": "ok", "usage": {"model": "m", "input_tokens": 10, "output_tokens": 5,
                                                         "cost_usd": 0.02}}).status_code == 200
    return {"daemon": daemon_id, "agent": agent["id"], "tasks": tasks}


def _task_ids(html: str) -> set[str]:
    return set(re.findall(r'<tr data-task-id="([^"]+)"', html))


def test_the_runs_page_filters_running_waiting_and_failed(client, world):
    t = world["tasks"]
    assert 'href="/runs"' in client.get("/").text  # in the sidebar
    assert _task_ids(client.get("/runs").text) == set(t.values())
    assert _task_ids(client.get("/runs?state=running").text) == {t["Runs now"]}
    assert _task_ids(client.get("/runs?state=waiting").text) == {t["Still queued"]}
    failed = client.get("/runs?state=failed").text
    assert _task_ids(failed) == {t["Breaks"]} and "the tests did not pass" in failed
    assert 'aria-current="page">Failed' in failed
    done = client.get("/runs").text
    row = done[done.index(f'data-task-id="{t["Done fine"]}"'):]
    assert "$0.0200" in row[:row.index("</tr>")]
    bad = client.get("/runs?state=sideways")
    assert bad.status_code == 422 and "running" in bad.text


def test_the_runs_page_is_paged(client, world, monkeypatch):
    monkeypatch.setattr(runlists, "PAGE_SIZE", 3)
    first = client.get("/runs").text
    second = client.get("/runs?page=2").text
    assert len(_task_ids(first)) == 3 and len(_task_ids(second)) == 1
    assert _task_ids(first) | _task_ids(second) == set(world["tasks"].values())
    assert 'href="/runs?state=all&amp;page=2"' in first and "Newer" not in first
    assert 'href="/runs?state=all&amp;page=1"' in second and "Older" not in second
    assert client.get("/runs?page=0").status_code in (400, 422)


def test_an_agents_page_shows_its_settings_and_runs_with_duration_and_cost(client, world):
    agents = client.get("/agents").text
    assert f'href="/agents/{world["agent"]}"' in agents  # the list links to it
    page = client.get(f"/agents/{world['agent']}")
    assert page.status_code == 200
    settings = page.text[page.text.index('id="agent-settings"'):]
    settings = settings[:settings.index("</dl>")]
    assert "command" in settings and "sandboxed" in settings and "true" in settings
    assert _task_ids(page.text) == set(world["tasks"].values())
    row = page.text[page.text.index(f'data-task-id="{world["tasks"]["Done fine"]}"'):]
    row = row[:row.index("</tr>")]
    assert "$0.0200" in row and re.search(r"\d+ s|\d+ min", row)
    failed = client.get(f"/agents/{world['agent']}?state=failed").text
    assert _task_ids(failed) == {world["tasks"]["Breaks"]}
    assert client.get("/agents/bot").status_code == 200  # by name too, like the CLI
    assert client.get("/agents/nobody").status_code == 404


def test_a_daemons_page_lists_its_runtimes_and_current_runs(client, world):
    assert f'href="/daemons/{world["daemon"]}"' in client.get("/daemons").text
    page = client.get(f"/daemons/{world['daemon']}").text
    runtimes = page[page.index('id="runtimes"'):]
    runtimes = runtimes[:runtimes.index("</table>")]
    assert 'data-provider="command"' in runtimes and 'data-provider="claude"' in runtimes and "2.0" in runtimes
    current = page[page.index('id="current-h"'):page.index('id="recent-h"')]
    assert _task_ids(current) == {world["tasks"]["Runs now"]}
    recent = page[page.index('id="recent-h"'):]
    assert _task_ids(recent) == {world["tasks"]["Breaks"], world["tasks"]["Done fine"]}
    assert client.get(f"/daemons/{uuid.uuid4()}").status_code == 404


def test_the_new_pages_stay_within_the_page_budget(client, world):
    """Issue 13's budget: the page's HTML plus the scripts and styles it loads, as sent."""
    for path in ("/runs", f"/agents/{world['agent']}", f"/daemons/{world['daemon']}", "/settings"):
        total = page_weight(client.get, path)
        assert total < PAGE_BUDGET, (path, total)
