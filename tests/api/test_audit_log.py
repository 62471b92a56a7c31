"""The audit log (issue 28 §4; service/audit.py): each audited action writes exactly one record
(who, what, when, from which address; never a secret's value), a refused action none; owners and
admins read it a page at a time or as JSON Lines, members do not; rows are never changed; the
retention deletes old ones."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.exc import DBAPIError
from starlette.testclient import TestClient

from predictorx.server.app import create_app
from predictorx.server.run import bootstrap
from predictorx.service import audit, forgepush
from predictorx.store.schema import AuditEvent, User, utcnow

SECRET = "sk-audit-" + uuid.uuid4().hex


def _counts(db) -> Counter:
    with db.read() as s:
        return Counter(dict(s.execute(select(AuditEvent.action, func.count()).group_by(AuditEvent.action)).all()))


def _ws(api) -> str:
    return api.get("/api/workspaces").json()[0]["id"]


@pytest.fixture
def web(db):
    """A server with its pages (the sign-in is one), and the owner's token."""
    token = bootstrap(db, "http://testserver")
    with TestClient(create_app(db, migrate=False, web=True), base_url="http://testserver") as client:
        yield client, token


def _call(client, token, method, path, **kw):
    return client.request(method, path, headers={"Authorization": f"Bearer {token}", "Origin": "http://testserver"},
                          **kw)


def test_each_audited_action_writes_exactly_one_record(web, db):
    client, owner = web
    steps: list[tuple[str, object]] = []

    def step(action: str, do) -> object:
        before = _counts(db)
        answer = do()
        assert answer.status_code < 400, (action, answer.status_code, answer.text)
        delta = _counts(db) - before
        assert delta == Counter({action: 1}), f"{action}: {dict(delta)}"
        steps.append((action, answer))
        return answer

    call = lambda method, path, **kw: _call(client, owner, method, path, **kw)
    ws = call("GET", "/api/workspaces").json()[0]["id"]
    code = call("POST", "/api/login-link").json()["url"].split("code=", 1)[1]
    step("sign_in", lambda: client.post("/login", data={"code": code}, headers={"Origin": "http://testserver"},
                                        follow_redirects=False))
    tok = step("token.create", lambda: call("POST", "/api/tokens", json={"name": "laptop"})).json()
    step("token.revoke", lambda: call("DELETE", f"/api/tokens/{tok['id']}"))
    bob = step("member.add", lambda: call("POST", f"/api/workspaces/{ws}/members",
                                          json={"name": "bob", "role": "member"})).json()
    step("member.role", lambda: call("PATCH", f"/api/workspaces/{ws}/members/{bob['user_id']}", json={"role": "admin"}))
    forge = step("forge.add", lambda: call("POST", "/api/forges", json={
        "kind": "github", "name": "gh", "base_url": "https://github.com", "credential": "ghp_" + SECRET})).json()
    step("forge.update", lambda: call("PATCH", f"/api/forges/{forge['id']}", json={"credential": "ghp_2" + SECRET}))
    step("forge.webhook_secret", lambda: call("POST", f"/api/forges/{forge['id']}/webhook-secret"))
    step("forge.remove", lambda: call("DELETE", f"/api/forges/{forge['id']}"))
    did = str(uuid.uuid4())
    daemon = step("token.create", lambda: call("POST", "/api/daemon/register", json={
        "daemon_id": did, "name": "box", "runtimes": [{"provider": "command"}]})).json()["token"]
    before = _counts(db)
    assert _call(client, daemon, "POST", "/api/daemon/register", json={  # its restart: no new token
        "daemon_id": did, "name": "box", "runtimes": [{"provider": "command"}]}).status_code == 200
    call("POST", "/api/agents", json={"name": "bot", "provider": "command", "command": ["true"], "runtime": did})
    assert _counts(db) == before  # a sandboxed agent's creation is not a sandbox change
    step("agent.sandbox", lambda: call("PATCH", "/api/agents/bot", json={"sandbox": False}))
    step("agent.sandbox", lambda: call("POST", "/api/agents", json={"name": "loose", "provider": "command",
                                                                     "command": ["true"], "sandbox": False}))
    before = _counts(db)
    assert call("PATCH", "/api/agents/bot", json={"instructions": "be brief"}).status_code == 200
    assert _counts(db) == before  # not a change of its confinement
    step("secret.set", lambda: call("PUT", "/api/agents/bot/env/API_KEY", json={"value": SECRET}))
    step("secret.unset", lambda: call("DELETE", "/api/agents/bot/env/API_KEY"))
    step("secret.set", lambda: call("PUT", "/api/secrets/DB_PASSWORD", json={"value": SECRET}))
    step("secret.grant", lambda: call("POST", "/api/agents/bot/grants", json={"name": "DB_PASSWORD"}))
    step("secret.revoke", lambda: call("DELETE", "/api/agents/bot/grants/DB_PASSWORD"))
    step("secret.unset", lambda: call("DELETE", "/api/secrets/DB_PASSWORD"))
    step("member.remove", lambda: call("DELETE", f"/api/workspaces/{ws}/members/{bob['user_id']}"))
    budget = step("budget.set", lambda: call("POST", "/api/budgets", json={
        "scope": "agent", "target": "bot", "period": "day", "metric": "cost", "limit": 5, "action": "stop"})).json()
    step("budget.set", lambda: call("POST", "/api/budgets", json={  # the same budget, its limit raised
        "scope": "agent", "target": "bot", "period": "day", "metric": "cost", "limit": 8, "action": "stop"}))
    step("budget.remove", lambda: call("DELETE", f"/api/budgets/{budget['id']}"))
    # A merge in the person's folder, as the daemon's answer is recorded (server/forgeasks.py).
    call("POST", "/api/issues", json={"title": "t", "assignee": "bot"})
    task_id = _call(client, daemon, "POST", "/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    before = _counts(db)
    with db.write() as s:
        owner_id = _owner_id(s)
        forgepush.local_recorded(s, ws, task_id, owner_id, "local_merge",
                                 {"ok": True, "data": {"sha": "abc", "into": "main", "message": "merged"}},
                                 address="127.0.0.9")
    assert _counts(db) - before == Counter({"merge": 1})

    # Refused actions write nothing.
    before = _counts(db)
    assert call("PUT", "/api/agents/bot/env/PATH", json={"value": "/evil"}).status_code == 422
    assert call("DELETE", f"/api/tokens/{uuid.uuid4()}").status_code == 404
    assert _counts(db) == before

    events = call("GET", "/api/audit", params={"limit": 500}).json()["events"]
    assert {e["action"] for e in events} >= {a for a, _ in steps} | {"merge"}
    raised = next(e for e in events if e["action"] == "budget.set")  # newest first: the raise
    assert raised["detail"]["limit"] == 8 and raised["detail"]["target"] == "agent bot" and raised["actor"] == "owner"
    signed = next(e for e in events if e["action"] == "sign_in")
    assert signed["detail"] == {"method": "code"} and signed["actor"] == "owner" and signed["address"] == "testclient"
    assert SECRET not in json.dumps(events)  # names and roles, never a value
    with db.read() as s:
        assert SECRET not in repr(list(s.execute(select(AuditEvent)).all()))


def _owner_id(session) -> str:
    return session.scalar(select(User.id).where(User.name == "owner"))


def test_only_owners_and_admins_read_it_paged_and_exported(api, db):
    ws = _ws(api)
    for n in range(7):
        assert api.post("/api/tokens", json={"name": f"t{n}"}).status_code == 201
    member = api.as_(api.post(f"/api/workspaces/{ws}/members", json={"name": "mia", "role": "member"}).json()["token"])
    admin = api.as_(api.post(f"/api/workspaces/{ws}/members", json={"name": "ada", "role": "admin"}).json()["token"])
    assert member.get("/api/audit").status_code == 403
    assert member.get("/api/audit/export").status_code == 403
    assert member.post("/api/tokens", json={"name": "mine"}).status_code == 201  # a member's event, seen by admins

    first = admin.get("/api/audit", params={"limit": 4}).json()
    assert len(first["events"]) == 4 and first["next_before"] is not None
    ids = [e["id"] for e in first["events"]]
    assert ids == sorted(ids, reverse=True)
    seen = list(ids)
    before = first["next_before"]
    while before:
        page = admin.get("/api/audit", params={"limit": 4, "before": before}).json()
        seen += [e["id"] for e in page["events"]]
        before = page["next_before"]
    assert len(seen) == len(set(seen)) == 7 + 1 + 2  # tokens, the member's token, two members added
    assert [e["actor"] for e in admin.get("/api/audit", params={"actor": "mia"}).json()["events"]] == ["mia"]
    assert len(admin.get("/api/audit", params={"action": "member"}).json()["events"]) == 2
    future = (utcnow() + timedelta(days=1)).isoformat()
    assert admin.get("/api/audit", params={"since": future}).json()["events"] == []

    export = admin.get("/api/audit/export")
    assert export.status_code == 200 and export.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in export.text.splitlines()]
    assert sorted(e["id"] for e in lines) == sorted(seen) and [e["id"] for e in lines] == sorted(seen)

    # Another workspace's owner sees none of these.
    other = api.as_(api.post(f"/api/workspaces/{ws}/members", json={"name": "olga"}).json()["token"])
    assert other.post("/api/workspaces", json={"name": "Other", "slug": "other"}).status_code == 201
    theirs = other.get("/api/audit", headers={"X-Workspace": "other"}).json()["events"]
    assert all(e["actor"] == "olga" for e in theirs)


def test_records_are_never_changed_and_the_retention_deletes_old_ones(api, db, monkeypatch):
    assert api.post("/api/tokens", json={"name": "t"}).status_code == 201
    with pytest.raises(DBAPIError), db.write() as s:
        s.execute(update(AuditEvent).values(action="token.revoke"))
    with db.write() as s:
        s.add(AuditEvent(at=utcnow() - timedelta(days=400), action="token.create", actor_id=None))
    monkeypatch.setenv(audit.RETENTION_ENV, "365")
    with db.read() as s:
        assert audit.prune_due(s)
    with db.write() as s:
        assert audit.prune(s) == 1
    with db.read() as s:
        assert not audit.prune_due(s)
        assert s.scalar(select(func.count()).select_from(AuditEvent)) == 1
    monkeypatch.setenv(audit.RETENTION_ENV, "0")  # keep for ever
    with db.read() as s:
        assert not audit.prune_due(s, now=utcnow() + timedelta(days=10_000))


def test_a_cursor_past_any_integer_is_refused_not_a_server_error(api):
    """(A fuzzed `before` past SQLite's 64-bit integers made an OverflowError, a 500.)"""
    r = api.get("/api/audit", params={"before": str(10**30)})
    assert r.status_code == 422 and "before" in r.text
