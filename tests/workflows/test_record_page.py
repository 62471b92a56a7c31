"""GET /api/workflows/record a page at a time (R-HAR-5): at most `limit` steps per page, an
instance cut between pages carries on at the start of the next, `next` is null at the end, and
the pages joined by instance id are the whole record."""

from __future__ import annotations

import uuid

from tests.workflows.test_api import _step


def _agent_token(api, title, agent):
    """An issue assigned to a new agent, and that agent's task token (one agent per issue: an
    agent runs one task at a time)."""
    d = api.as_(api.post("/api/daemon/register", json={
        "daemon_id": str(uuid.uuid4()), "name": "h", "capabilities": [],
        "runtimes": [{"provider": "command", "version": "1"}]}).json()["token"])
    assert api.post("/api/agents", json={"name": agent, "provider": "command", "command": ["true"]}).status_code < 300
    issue = api.post("/api/issues", json={"title": title, "assignee": agent}).json()
    claim = d.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]
    return issue, api.as_(claim["token"])


def _pages(api, limit, **params):
    pages, cursor = [], None
    while True:
        r = api.get("/api/workflows/record", params={**params, "limit": limit, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        pages.append(r.json())
        cursor = pages[-1]["next"]
        if cursor is None:
            return pages
        assert len(pages) < 50, "the cursor does not advance"


def _joined(pages):
    out: dict[str, list] = {}
    for page in pages:
        for rec in page["records"]:
            out.setdefault(rec["instance"]["id"], []).extend((s["seq"], s["node_id"]) for s in rec["steps"])
    return out


def test_the_record_pages_join_to_the_whole_record(api):
    numbers = []
    for i, title in enumerate(("Add a CSV export command to the CLI", "Add a JSON export command to the CLI")):
        issue, agent = _agent_token(api, title, f"a{i}")
        n = issue["number"]
        numbers.append(n)
        for step in ("capture", "requirements"):
            assert _step(agent, n, "feature-request", step).status_code == 200
        assert _step(api, n, "feature-request", "signoff").status_code == 200
    # an instance with no step yet is in the record too
    assert api.post(f"/api/issues/{numbers[0]}/workflows", json={"process": "bug-triage"}).status_code == 200

    [whole] = _pages(api, 10_000)
    assert whole["next"] is None
    full = _joined([whole])
    assert sorted(len(v) for v in full.values()) == [0, 3, 3]
    assert all([seq for seq, _ in steps] == list(range(1, len(steps) + 1)) for steps in full.values())

    for limit in (1, 2, 3, 4, 7):
        pages = _pages(api, limit)
        assert all(sum(len(r["steps"]) for r in p["records"]) <= limit for p in pages)
        assert all(len(p["records"]) <= limit + 1 for p in pages)  # + the one the cursor was in
        assert _joined(pages) == full, limit
        assert all(p["records"] for p in pages[:-1])  # no empty page before the end
    # with two steps a page, a three-step instance is cut: it is on two pages, its steps in order
    cut = _pages(api, 2)
    seen: dict[str, int] = {}
    for page in cut:
        for rec in page["records"]:
            seen[rec["instance"]["id"]] = seen.get(rec["instance"]["id"], 0) + 1
    assert sorted(seen.values())[-1] == 2 and len(cut) >= 3

    # one issue: only its instances
    only = _joined(_pages(api, 1, issue=str(numbers[1])))
    assert len(only) == 1 and list(only.values()) == [full[next(iter(only))]]


def test_a_bad_cursor_or_limit_is_a_sentence(api):
    r = api.get("/api/workflows/record", params={"cursor": "not-a-cursor"})
    assert r.status_code == 422 and "is not one this server gave" in r.json()["detail"]
    for limit in (0, 10_001):
        r = api.get("/api/workflows/record", params={"limit": limit})
        assert r.status_code == 422
    assert api.get("/api/workflows/record").json() == {"records": [], "next": None}
