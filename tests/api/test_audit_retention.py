"""Each workspace's own audit retention (issue 28 §4): owners set it (never below the server's
floor, 0 for ever, or back to the server's default), the change is itself audited once, admins
read it and members do not, and the hourly prune deletes each workspace's old events by its own
setting and everything else (sign-ins included) by the server's — on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from predictorx.service import audit
from predictorx.store.schema import AuditEvent, Workspace, utcnow


def _ws(api) -> str:
    return api.get("/api/workspaces").json()[0]["id"]


def test_owners_set_it_admins_read_it_and_the_floor_holds(api, monkeypatch):
    ws = _ws(api)
    admin = api.as_(api.post(f"/api/workspaces/{ws}/members", json={"name": "ada", "role": "admin"}).json()["token"])
    member = api.as_(api.post(f"/api/workspaces/{ws}/members", json={"name": "mia"}).json()["token"])
    monkeypatch.setenv(audit.RETENTION_ENV, "365")
    assert admin.get("/api/audit/retention").json() == {"days": 365, "source": "server", "server_days": 365,
                                                        "minimum_days": 30}
    assert member.get("/api/audit/retention").status_code == 403
    assert admin.put("/api/audit/retention", json={"days": 90}).status_code == 403
    short = api.put("/api/audit/retention", json={"days": 7})
    assert short.status_code == 422 and "at least 30 days" in short.json()["detail"]
    assert api.put("/api/audit/retention", json={"days": -1}).status_code == 422
    set_ = api.put("/api/audit/retention", json={"days": 90})
    assert set_.status_code == 200 and set_.json()["days"] == 90 and set_.json()["source"] == "workspace"
    assert api.put("/api/audit/retention", json={"days": 0}).json()["days"] is None  # for ever
    assert api.put("/api/audit/retention", json={}).json()["source"] == "server"
    changes = api.get("/api/audit", params={"action": "audit.retention"}).json()["events"]
    assert [e["detail"] for e in changes] == [{"from": 0, "to": None}, {"from": 90, "to": 0}, {"from": None, "to": 90}]


def test_the_prune_keeps_each_workspace_by_its_own_setting(api, db, monkeypatch):
    ws = _ws(api)
    assert api.post("/api/workspaces", json={"name": "Other", "slug": "other"}).status_code == 201
    with db.read() as s:
        other = s.scalar(select(Workspace.id).where(Workspace.slug == "other"))
    monkeypatch.setenv(audit.RETENTION_ENV, "365")
    assert api.put("/api/audit/retention", json={"days": 60}).status_code == 200  # ws: 60 days
    old = utcnow() - timedelta(days=100)
    with db.write() as s:
        for where in (ws, other, None):  # 100 days old: past ws's 60, within the server's 365
            s.add(AuditEvent(at=old, action="token.create", workspace_id=where, target=f"old {where}"))
        s.add(AuditEvent(at=utcnow() - timedelta(days=400), action="sign_in", workspace_id=None, target="ancient"))
    with db.write() as s:
        assert audit.prune(s) == 2
    with db.read() as s:
        left = set(s.scalars(select(AuditEvent.target).where(AuditEvent.target.like("old%") | (AuditEvent.target == "ancient"))))
    assert left == {f"old {other}", "old None"}
    with db.write() as s:  # kept for ever in ws: nothing of its own goes, whatever its age
        s.get(Workspace, ws).audit_retention_days = 0
        s.add(AuditEvent(at=utcnow() - timedelta(days=5000), action="token.create", workspace_id=ws, target="older"))
    with db.read() as s:
        assert not audit.prune_due(s)
