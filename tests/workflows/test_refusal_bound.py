"""Refused attempts are part of the record, and a prompt-injected agent can repeat one without
end: the same refusal (same step, same actor, the instance not moved on) within the window is
counted on one row, and an instance keeps at most MAX_REFUSED_ROWS refused rows (R-HAR-5)."""

from __future__ import annotations

from datetime import timedelta

from tests.workflows.test_api import _agent_token, _step

from predictorx.service import workflow_instances as instances
from predictorx.workflows import qaqc
from predictorx.workflows.library import SHIPPED, load_library


def _denied_signoff(api):
    """An agent that holds the sign-off's role and that the strict team policy still refuses."""
    project = api.post("/api/projects", json={"title": "p"}).json()
    issue, agent = _agent_token(api, "Add support for Excel uploads to the platform", project_id=project["id"])
    n = issue["number"]
    assert _step(agent, n, "feature-request", "capture").status_code == 200
    assert _step(agent, n, "feature-request", "requirements").status_code == 200
    assert api.post(f"/api/projects/{project['id']}/roles",
                    json={"role": "stakeholder", "kind": "agent", "name": "a1"}).status_code == 201
    return n, agent


def _refused(api, n):
    history = api.get(f"/api/issues/{n}/workflows/feature-request").json()["history"]
    return [h for h in history if h["status"] == "refused"]


def test_a_repeated_refusal_is_one_row_with_a_count(api):
    n, agent = _denied_signoff(api)
    for i in range(30):
        r = _step(agent, n, "feature-request", "signoff", reason=f"attempt {i} " + "x" * 5000)
        assert r.status_code == 403 and "under strict policy and denied" in r.json()["detail"]
    assert "refused 30 times since" in r.json()["detail"] and "recorded once" in r.json()["detail"]
    [row] = _refused(api, n)
    assert row["attempts"] == 30 and row["node_id"] == "signoff" and row["reason"].startswith("attempt 0 ")
    assert row["last_attempt_at"] >= row["created_at"]
    # the steps that were allowed are all still there, and qaqc reports the count
    history = api.get(f"/api/issues/{n}/workflows/feature-request").json()["history"]
    assert [h["node_id"] for h in history] == ["capture", "requirements", "signoff"]
    rec = api.get("/api/workflows/record", params={"issue": n}).json()["records"]
    [finding] = qaqc.report(load_library([SHIPPED]), rec)["findings"]
    assert finding["finding"] == "refused" and "30 attempts" in finding["detail"]


def test_refused_rows_per_instance_are_capped_with_a_sentence(api, monkeypatch):
    # no window (every refusal would be a row of its own) and a small cap
    monkeypatch.setattr(instances, "REFUSAL_WINDOW", timedelta(0))
    monkeypatch.setattr(instances, "MAX_REFUSED_ROWS", 5)
    n, agent = _denied_signoff(api)
    for _ in range(12):
        r = _step(agent, n, "feature-request", "signoff")
        assert r.status_code == 403
    detail = r.json()["detail"]
    assert "already records 5 refused attempts, the most it keeps" in detail and "(8 attempts)" in detail
    rows = _refused(api, n)
    assert [r["attempts"] for r in rows] == [1, 1, 1, 1, 8]


def test_the_panel_shows_the_count_and_only_the_latest_steps(db, monkeypatch):
    from starlette.testclient import TestClient
    from tests.api.conftest import Api

    from predictorx.server.app import create_app
    from predictorx.server.run import bootstrap
    from predictorx.server.web import workflows as panel

    monkeypatch.setattr(panel, "HISTORY_SHOWN", 2)
    token = bootstrap(db, "http://testserver")
    with TestClient(create_app(db, migrate=False), follow_redirects=False) as c:
        c.cookies.set("px_token", token)
        api = Api(c, token)
        n, agent = _denied_signoff(api)
        for _ in range(4):
            assert _step(agent, n, "feature-request", "signoff").status_code == 403
        html = c.get(f"/issues/{n}/workflows", headers={"HX-Request": "true"}).text
    assert "refused ×4" in html and "The latest 2 steps; 1 earlier step is in the record" in html
    assert ">capture<" not in html and ">requirements<" in html and ">signoff<" in html
