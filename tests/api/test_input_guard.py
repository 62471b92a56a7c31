"""Input that is not valid text never gets in, and text already in never takes a page down
(issue 8 finding 9, R-SEC-3); request bodies are bounded (finding 10, R-SEC-7)."""

from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import update

from predictorx.server.bodyguard import BodyGuard, text_problem
from predictorx.store.schema import ProjectResource

SURROGATE = '"\\ud800"'  # valid JSON syntax, no character: Python decodes it to a lone surrogate


def _raw(api, method, url, text, token=None):
    headers = {"Content-Type": "application/json"}
    if token is not False:
        headers["Authorization"] = f"Bearer {token or api.token}"
    return api.client.request(method, url, content=text.encode(), headers=headers)


def _daemon(api):
    did = str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": "host", "capabilities": [],
                                                "runtimes": [{"provider": "command", "version": "1"}]})
    assert r.status_code == 200, r.text
    return did, api.as_(r.json()["token"])


@pytest.mark.parametrize("url, body", [
    ("/api/projects", '{"title": "P", "resources": [{"resource_type": "github_repo", '
                      '"resource_ref": {"url": "https://github.com/o/r", "ref": %s}}]}' % SURROGATE),
    ("/api/projects", '{"title": %s}' % SURROGATE),
    ("/api/issues", '{"title": "x", "body": "ok \\udfff end"}'),
    ("/api/agents", '{"name": "a", "provider": "command", "command": ["echo", %s]}' % SURROGATE),
    ("/api/projects", '{"title": "P", %s: 1}' % SURROGATE),  # in a key
])
def test_finding_09_lone_surrogate_is_refused_and_nothing_is_written(api, url, body):
    before = {u: api.get(u).json() for u in ("/api/projects", "/api/issues", "/api/agents")}
    r = _raw(api, "POST", url, body)
    assert r.status_code == 400, r.text
    assert "not valid Unicode" in r.json()["detail"]
    assert {u: api.get(u).json() for u in before} == before


def test_finding_09_valid_surrogate_pairs_and_escaped_backslashes_pass(api):
    r = _raw(api, "POST", "/api/issues", '{"title": "smile \\ud83d\\ude00", "body": "a\\\\ud800 literal"}')
    assert r.status_code == 201, r.text
    assert r.json()["title"] == "smile \U0001F600" and r.json()["body"] == "a\\ud800 literal"


def test_finding_09_invalid_utf8_bytes_are_refused(api):
    r = api.client.post("/api/issues", content=b'{"title": "\xed\xa0\x80"}',
                        headers={"Authorization": f"Bearer {api.token}", "Content-Type": "application/json"})
    assert r.status_code == 400 and "UTF-8" in r.json()["detail"]
    assert api.get("/api/issues").json() == []


def test_finding_09_text_already_stored_never_makes_a_500(api, db):
    """A row poisoned before this fix (or by an older server): pages and claims still answer."""
    did, d = _daemon(api)
    api.post("/api/agents", json={"name": "a1", "provider": "command", "command": ["true"], "runtime": did})
    p = api.post("/api/projects", json={"title": "P", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": "https://github.com/o/r", "ref": "main"}}]}).json()
    with db.write() as s:  # JSON columns hold it as an escape; the old server let it in this way
        s.execute(update(ProjectResource).values(resource_ref={"url": "https://github.com/o/r", "ref": "b\ud800"}))
    api.post("/api/issues", json={"title": "go", "project_id": p["id"], "assignee": "a1"})
    assert api.get(f"/api/projects/{p['id']}").status_code == 200
    assert api.get(f"/api/projects/{p['id']}/resources").status_code == 200
    claimed = d.post("/api/daemon/claim", json={"limit": 1})
    assert claimed.status_code == 200, claimed.text
    assert len(claimed.json()["tasks"]) == 1


def test_finding_10_body_over_the_limit_is_413_before_authentication(api):
    big = b"x" * (10 * 1024 * 1024 + 1)
    r = api.client.post("/api/projects", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "larger than this server accepts (10 MiB)" in r.json()["detail"]
    assert "PREDICTORX_MAX_BODY_BYTES" in r.json()["detail"]

    def chunks():  # no Content-Length: counted as it streams
        for _ in range(11):
            yield b" " * (1024 * 1024)
    r = api.client.post("/api/issues", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert api.get("/api/issues").json() == []


def test_finding_10_limit_is_configurable(monkeypatch, db):
    from starlette.testclient import TestClient

    from predictorx.server.app import create_app
    from predictorx.server.run import bootstrap

    monkeypatch.setenv("PREDICTORX_MAX_BODY_BYTES", str(2 * 1024 * 1024))
    token = bootstrap(db, "http://testserver")
    with TestClient(create_app(db, migrate=False, web=False)) as client:
        h = {"Authorization": f"Bearer {token}"}
        assert client.post("/api/issues", json={"title": "t", "body": "b" * 99_000}, headers=h).status_code == 201
        r = client.post("/api/issues", content=b" " * (2 * 1024 * 1024 + 1), headers={**h, "Content-Type": "application/json"})
        assert r.status_code == 413 and "(2 MiB)" in r.json()["detail"]
    monkeypatch.setenv("PREDICTORX_MAX_BODY_BYTES", "1000")
    with pytest.raises(ValueError, match="at least"):
        create_app(db, migrate=False, web=False)


def test_text_problem_is_cheap_on_ordinary_bodies() -> None:
    assert text_problem(json.dumps({"a": "plain ü"}, ensure_ascii=False).encode()) is None
    assert text_problem(b'{"a": "\\ud800"}') is not None
    assert text_problem(b'not json \\ud800') is None  # the route's parser reports that
    assert BodyGuard(lambda *a: None, max_bytes=4096).max_bytes == 4096  # tests may go lower


def test_finding_14_proc_file_urls_are_refused_when_saved(api):
    for url in ("file:///proc/1/cwd", "file:///sys/kernel", "file://localhost/dev/shm/x"):
        r = api.post("/api/projects", json={"title": "P", "resources": [
            {"resource_type": "github_repo", "resource_ref": {"url": url}}]})
        assert r.status_code == 422 and "/proc, /sys or /dev" in r.text, url
    assert api.get("/api/projects").json() == []
