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
    api.post(f"/api/issues/{n}/beans", json={"title": "Write: the \"parser\"", "body": "Parse it.\n\nCarefully."})
    b2 = api.post(f"/api/issues/{n}/beans", json={"title": "Docs"}).json()
    api.post(f"/api/issues/{n}/beans/{b2['id']}/claim", json={}, headers={"If-Match": str(b2["etag"])})
    api.post(f"/api/issues/{n}/beans/Docs/note", json={"text": "half done"})
    stale = api.post(f"/api/issues/{n}/beans/Docs/resolve", json={}, headers={"If-Match": "1"})
    assert stale.status_code == 409 and "not 1" in stale.json()["detail"]
    files = api.get(f"/api/issues/{n}/beans/export").json()["files"]
    docs = next(t for name, t in files.items() if "--docs.md" in name)
    assert docs.startswith("---\n# px-") and "\nstatus: in-progress\n" in docs and f"parent: issue-{n}" in docs
    assert "## Notes" in docs and "half done" in docs
    parsed = {beanfile.load(t)["title"]: beanfile.load(t) for t in files.values()}
    assert parsed['Write: the "parser"']["body"] == "Parse it.\n\nCarefully." and parsed["Docs"]["body"] == ""
    m = api.post("/api/issues", json={"title": "Elephants"}).json()["number"]
    out = api.post(f"/api/issues/{m}/beans/import", json={"files": files}).json()["beans"]
    assert sorted((b["title"], b["status"]) for b in out) == [("Docs", "in-progress"), ('Write: the "parser"', "created")]
    again = api.post(f"/api/issues/{m}/beans/import", json={"files": files}).json()["beans"]
    assert not any(b["created"] for b in again)
    bad = api.post(f"/api/issues/{m}/beans/import", json={"files": {"x.md": "---\nstatus: todo\n---\n"}})
    assert bad.status_code == 422 and "x.md: a bean file needs a title" in bad.json()["detail"]
