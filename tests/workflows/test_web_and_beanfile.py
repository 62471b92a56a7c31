"""The issue page's Workflows panel (instance, current step drawn, history with verdicts) and
beans in hmans/beans' Markdown format (R-HAR-3, R-HAR-6)."""

from __future__ import annotations

from starlette.testclient import TestClient

from predictorx.server.app import create_app
from predictorx.server.run import bootstrap
from predictorx.workflows import beanfile


def test_workflows_panel_shows_instance_diagram_and_history(db):
    token = bootstrap(db, "http://testserver")
    with TestClient(create_app(db, migrate=False), follow_redirects=False) as c:
        c.cookies.set("px_token", token)
        h = {"Authorization": f"Bearer {token}"}
        issue = c.post("/api/issues", json={"title": "The export <script>crashes</script> on empty files"},
                       headers=h).json()
        n = issue["number"]
        page = c.get(f"/issues/{n}")
        assert page.status_code == 200 and f'hx-get="/issues/{n}/workflows"' in page.text
        r = c.post(f"/api/issues/{n}/workflows/bug-triage/steps", json={"step": "reproduce"}, headers=h)
        assert r.status_code == 403  # the agent lane: a person is refused …
        panel = c.get(f"/issues/{n}/workflows", headers={"HX-Request": "true"})
        assert panel.status_code == 200
        assert "bug-triage" in panel.text and 'data-node="reproduce" data-state="enabled"' in panel.text
        assert "<script>crashes" not in panel.text  # titles are escaped
        assert "Classified as <strong>a bug report</strong>" in panel.text
        full = c.get(f"/issues/{n}/workflows")
        assert full.status_code == 200 and "← Back" in full.text
        other = c.get("/issues/999/workflows", headers={"HX-Request": "true"})
        assert other.status_code == 404


def test_beans_round_trip_through_hmans_markdown(api):
    n = api.post("/api/issues", json={"title": "Penguins"}).json()["number"]
    b1 = api.post(f"/api/issues/{n}/beans", json={"title": "Write: the \"parser\"",
                                                  "body": "Parse it.\n\n## Notes\n\nIts own notes."}).json()
    b2 = api.post(f"/api/issues/{n}/beans", json={"title": "Docs"}).json()
    api.post(f"/api/issues/{n}/beans/{b2['id']}/claim", json={}, headers={"If-Match": str(b2["etag"])})
    api.post(f"/api/issues/{n}/beans/Docs/note", json={"text": "half done"})
    stale = api.post(f"/api/issues/{n}/beans/Docs/resolve", json={}, headers={"If-Match": "1"})
    assert stale.status_code == 409 and "not 1" in stale.json()["detail"]
    exported = api.get(f"/api/issues/{n}/beans/export").json()
    files = exported["files"]
    docs = files[f"{b2['key']}--docs.md"]
    assert docs.startswith(f"---\n# {b2['key']}\ntitle: Docs\nstatus: in-progress\n") and "parent:" not in docs
    assert beanfile.JOURNAL_START in docs and "half done" in docs  # the journal travels, readable
    parsed = {beanfile.load(t, name).title: beanfile.load(t, name) for name, t in files.items()}
    assert parsed['Write: the "parser"'].body == "Parse it.\n\n## Notes\n\nIts own notes."  # the body's own
    assert parsed["Docs"].body == ""  # the journal block is not body
    assert parsed['Write: the "parser"'].key == b1["key"] and exported["etags"][b2["key"]] == 3
    m = api.post("/api/issues", json={"title": "Elephants"}).json()["number"]
    out = api.post(f"/api/issues/{m}/beans/import", json={"files": files}).json()["beans"]
    assert sorted((b["key"], b["title"], b["status"]) for b in out) == sorted(
        [(b2["key"], "Docs", "in-progress"), (b1["key"], 'Write: the "parser"', "created")])
    assert {b["created_at"] for b in out} == {b1["created_at"], b2["created_at"]}  # the times travel
    again = api.post(f"/api/issues/{m}/beans/import", json={"files": files}).json()
    assert not any(b["created"] for b in again["beans"]) and again["counts"]["unchanged"] == 2
    bad = api.post(f"/api/issues/{m}/beans/import", json={"files": {"x.md": "---\nstatus: todo\n---\n"}})
    assert bad.status_code == 200 and bad.json()["files"] == [
        {"file": "x.md", "result": "refused", "reason": "x.md has no title"}]
