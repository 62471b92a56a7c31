"""`/api/forges` (issue 22 §1): the credential is write-only — in no answer, no log line and no
database row in plain text; who may do what; another workspace's connections do not exist; bad
input is a 4xx with a sentence; a forge's refusal is its own sentence, never a 500."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import MetaData, select

from predictorx.service import forges
from predictorx.store.schema import ForgeConnection, PullRequest

from forge_testkit import CRASH_TOKEN, DOWN_TOKEN, GOOD_TOKEN, KIND, REFUSAL, REFUSED_TOKEN, registered_kit_forge


@pytest.fixture(autouse=True)
def testforge():
    with registered_kit_forge() as forge:
        yield forge


def _add(api, **over):
    body = {"kind": KIND, "name": "gh", "base_url": "HTTPS://Forge.Test:443/", "credential": GOOD_TOKEN, **over}
    return api.post("/api/forges", json=body)


def _ws(api) -> str:
    return api.get("/api/workspaces").json()[0]["id"]


def _member(api, role: str, name: str | None = None):
    r = api.post(f"/api/workspaces/{_ws(api)}/members", json={"name": name or role, "role": role})
    assert r.status_code in (200, 201), r.text
    return api.as_(r.json()["token"])


def _everything_stored(db) -> str:
    meta = MetaData()
    meta.reflect(db.engine)
    with db.engine.connect() as conn:
        return "\n".join(repr(tuple(r)) for t in meta.sorted_tables for r in conn.execute(select(t)))


def test_add_answers_the_webhook_secret_once_and_never_the_token(api, db, database_url, caplog):
    caplog.set_level(logging.DEBUG)
    r = _add(api, members_may_merge=True)
    assert r.status_code == 201, r.text
    made = r.json()
    hook = made["webhook_secret"]
    assert made["base_url"] == "https://forge.test" and made["host"] == "forge.test"
    assert made["api_url"] == "https://forge.test/api/v9"  # the kind's default
    assert made["credential"] == f"set, ••••{GOOD_TOKEN[-4:]}" and made["members_may_merge"] is True
    assert made["webhook_url"] == f"http://testserver/api/forges/{made['id']}/webhook"
    assert len(hook) >= 40 and GOOD_TOKEN not in r.text

    answers = [api.get("/api/forges"), api.get(f"/api/forges/{made['id']}"), api.get("/api/forges/gh"),
               api.patch(f"/api/forges/{made['id']}", json={"name": "github"}),
               api.post(f"/api/forges/{made['id']}/test")]
    for a in answers:
        assert a.status_code == 200, a.text
        assert GOOD_TOKEN not in a.text and hook not in a.text
    assert answers[4].json()["account"] == "octo-bot"

    stored = _everything_stored(db)
    assert GOOD_TOKEN not in stored and GOOD_TOKEN[:-4] not in stored and hook not in stored
    with db.read() as s:
        raw = s.execute(select(ForgeConnection.credential_sealed, ForgeConnection.webhook_secret_sealed)).one()
    assert all(v.startswith("pxs2:") for v in raw)
    if database_url.startswith("sqlite:///"):
        path = Path(database_url.removeprefix("sqlite:///"))
        data = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file())
        assert GOOD_TOKEN.encode() not in data and hook.encode() not in data
    logged = "\n".join(rec.getMessage() + str(rec.args) for rec in caplog.records)
    assert GOOD_TOKEN not in logged and hook not in logged


def test_update_replaces_the_token_and_rotating_the_webhook_secret_shows_the_new_one_once(api, db, testforge):
    made = _add(api).json()
    r = api.patch(f"/api/forges/{made['id']}", json={"credential": "tf-second-token-9999",
                                                      "base_url": "https://forge.test/sub/"})
    assert r.status_code == 200 and r.json()["credential"] == "set, ••••9999"
    assert r.json()["api_url"] == "https://forge.test/sub/api/v9" and "tf-second-token" not in r.text
    with db.read() as s:
        assert forges.connection_of(s.get(ForgeConnection, made["id"])).token == "tf-second-token-9999"
    r = api.post(f"/api/forges/{made['id']}/webhook-secret")
    assert r.status_code == 200
    fresh = r.json()["webhook_secret"]
    assert fresh != made["webhook_secret"] and made["webhook_secret"] not in r.text
    with db.read() as s:
        assert forges.webhook_secret_of(s.get(ForgeConnection, made["id"])) == fresh
    assert fresh not in api.get(f"/api/forges/{made['id']}").text


def test_moving_a_connection_to_another_host_needs_the_token_again(api, testforge):
    """An admin must not be able to send the token an owner gave to an address of their choosing."""
    made = _add(api).json()
    for change in ({"base_url": "https://evil.test"}, {"api_url": "https://evil.test/api"},
                   {"base_url": "http://forge.test"}, {"api_url": "https://forge.test:8443/api/v9"}):
        r = api.patch(f"/api/forges/{made['id']}", json=change)
        assert r.status_code == 422 and "needs its token again" in r.json()["detail"], (change, r.text)
    assert api.get(f"/api/forges/{made['id']}").json()["api_url"] == "https://forge.test/api/v9"
    assert api.post(f"/api/forges/{made['id']}/test").status_code == 200
    assert testforge.calls[-1].api_url == "https://forge.test/api/v9"
    r = api.patch(f"/api/forges/{made['id']}", json={"base_url": "https://other.test", "credential": GOOD_TOKEN})
    assert r.status_code == 200 and r.json()["api_url"] == "https://other.test/api/v9"
    assert r.json()["host"] == "other.test"


def test_who_may_merge_through_a_connection(api, db):
    made = _add(api).json()
    with db.read() as s:
        row = s.get(ForgeConnection, made["id"])
        assert forges.may_merge(row, "owner") and forges.may_merge(row, "admin")
        assert not forges.may_merge(row, "member") and not forges.may_merge(row, None)
        with pytest.raises(forges.Forbidden, match="--members-may-merge"):
            forges.require_merge_allowed(row, "member")
    api.patch(f"/api/forges/{made['id']}", json={"members_may_merge": True})
    with db.read() as s:
        assert forges.may_merge(s.get(ForgeConnection, made["id"]), "member")


@pytest.mark.parametrize("body, status, words", [
    ({"kind": "svn"}, 422, "unknown forge kind 'svn'"),
    ({"base_url": "ftp://forge.test"}, 422, "must be an http(s) URL"),
    ({"base_url": "https://user:pw@forge.test"}, 422, "never in a URL"),
    ({"credential": "two words-abcdef"}, 422, "one access token"),
    ({"credential": "short"}, 422, "too short"),
    ({"name": ""}, 422, "name"),
    ({"name": "my forge/1"}, 422, "letters, digits"),
    ({"api_url": "not a url"}, 422, "api_url"),
    ({"surprise": 1}, 422, "surprise"),
])
def test_bad_input_is_a_sentence(api, body, status, words):
    r = _add(api, **body)
    assert r.status_code == status, r.text
    assert words in r.json()["detail"]
    assert GOOD_TOKEN not in r.text


def test_a_second_connection_of_the_same_name_is_a_conflict(api):
    assert _add(api).status_code == 201
    r = _add(api)
    assert r.status_code == 409 and "already exists" in r.json()["detail"]


@pytest.mark.parametrize("token, status, words", [(REFUSED_TOKEN, 422, REFUSAL),
                                                  (DOWN_TOKEN, 502, "could not be reached"),
                                                  (CRASH_TOKEN, 502, "forge client failed (RuntimeError)")])
def test_test_gives_the_forges_own_refusal(api, token, status, words, testforge, caplog):
    caplog.set_level(logging.DEBUG)
    made = _add(api, credential=token).json()
    r = api.post(f"/api/forges/{made['id']}/test")
    assert r.status_code == status and words in r.json()["detail"], r.text
    assert token not in r.text
    assert token not in "\n".join(rec.getMessage() for rec in caplog.records)
    assert testforge.calls[-1].token == token and testforge.calls[-1].api_url == "https://forge.test/api/v9"


def test_a_key_that_cannot_open_the_token_is_a_sentence_not_a_500(api, monkeypatch):
    made = _add(api).json()
    import base64
    import os

    monkeypatch.setenv("PREDICTORX_SECRET_KEY", base64.b64encode(os.urandom(32)).decode())
    r = api.post(f"/api/forges/{made['id']}/test")
    assert r.status_code == 503 and "PREDICTORX_SECRET_KEY" in r.json()["detail"]


def test_roles_members_list_admins_manage(api):
    admin, member = _member(api, "admin"), _member(api, "member")
    made = _add(admin).json()
    assert made["name"] == "gh"
    listed = member.get("/api/forges")
    assert listed.status_code == 200 and [c["name"] for c in listed.json()] == ["gh"]
    assert GOOD_TOKEN not in listed.text and made["webhook_secret"] not in listed.text
    assert member.get(f"/api/forges/{made['id']}").status_code == 200
    for r in (_add(member, name="mine"), member.patch(f"/api/forges/{made['id']}", json={"name": "x"}),
              member.post(f"/api/forges/{made['id']}/test"), member.post(f"/api/forges/{made['id']}/webhook-secret"),
              member.delete(f"/api/forges/{made['id']}")):
        assert r.status_code == 403, r.text
    assert admin.delete(f"/api/forges/{made['id']}").status_code == 200


def test_another_workspaces_connection_does_not_exist(api):
    made = _add(api).json()
    outsider = _member(api, "member", "outsider")
    ws2 = outsider.post("/api/workspaces", json={"name": "Elsewhere", "slug": "elsewhere"}).json()["id"]
    other = outsider.as_(outsider.token)
    h = {"X-Workspace": ws2}
    assert other.get("/api/forges", headers=h).json() == []
    for r in (other.get(f"/api/forges/{made['id']}", headers=h), other.get("/api/forges/gh", headers=h),
              other.patch(f"/api/forges/{made['id']}", headers=h, json={"name": "x"}),
              other.post(f"/api/forges/{made['id']}/test", headers=h),
              other.post(f"/api/forges/{made['id']}/webhook-secret", headers=h),
              other.delete(f"/api/forges/{made['id']}", headers=h)):
        assert r.status_code == 404, r.text
        assert "forge.test" not in r.text


def test_remove_is_refused_while_a_branch_or_pr_is_live(api, db):
    made = _add(api).json()
    issue = api.post("/api/issues", json={"title": "t"}).json()
    with db.write() as s:
        s.add(PullRequest(workspace_id=made["workspace_id"], issue_id=issue["id"], connection_id=made["id"],
                          repo_path="o/r", repo_url="https://forge.test/o/r", branch="px/1", state="open"))
    r = api.delete(f"/api/forges/{made['id']}")
    assert r.status_code == 409 and "in use by 1" in r.json()["detail"]
    with db.write() as s:
        s.execute(PullRequest.__table__.update().values(state="merged"))
    r = api.delete(f"/api/forges/{made['id']}")
    assert r.status_code == 200 and r.json()["finished_pull_requests_removed"] == 1
    assert api.get(f"/api/forges/{made['id']}").status_code == 404


def test_connection_for_url_by_host_port_and_path(api, db):
    made = _add(api).json()
    _add(api, name="local", base_url="http://127.0.0.1:3000/git")
    ws = made["workspace_id"]
    with db.read() as s:
        def find(url):
            hit = forges.connection_for_url(s, ws, url)
            return (hit[0].name, hit[1].path) if hit else None
        assert find("https://forge.test/org/repo.git") == ("gh", "org/repo")
        assert find("git@forge.test:org/repo.git") == ("gh", "org/repo")
        assert find("ssh://git@forge.test:2222/org/repo") == ("gh", "org/repo")
        assert find("https://forge.test:8443/org/repo") is None  # another port is another server
        assert find("https://elsewhere.test/org/repo") is None
        assert find("http://127.0.0.1:3000/git/team/app.git") == ("local", "team/app")
        assert find("http://127.0.0.1:3000/other/team/app.git") is None
        assert find("/srv/some/folder") is None
        assert forges.connection_for_url(s, "another-workspace", "https://forge.test/org/repo") is None


def test_project_forge_policy_defaults_set_and_refusals(api):
    p = api.post("/api/projects", json={"title": "P"}).json()
    assert p["forge_policy"] == {"auto_push": True, "auto_pr": True, "draft": True, "max_followups": 3,
                                 "on_merge": "done"}
    r = api.patch(f"/api/projects/{p['id']}", json={"forge_policy": {"auto_pr": False, "max_followups": 1,
                                                                      "on_merge": "in_review"}})
    assert r.status_code == 200, r.text
    assert r.json()["forge_policy"] == {"auto_push": True, "auto_pr": False, "draft": True, "max_followups": 1,
                                        "on_merge": "in_review"}
    for bad, words in (({"on_merge": "closed"}, "on_merge must be one of done, in_review"),
                       ({"max_followups": 99}, "from 0 to 20"), ({"max_followups": -1}, "from 0 to 20"),
                       ({"auto_push": "maybe"}, "auto_push"), ({"colour": "red"}, "colour")):
        r = api.patch(f"/api/projects/{p['id']}", json={"title": "changed?", "forge_policy": bad})
        assert r.status_code == 422 and words in r.json()["detail"], r.text
    got = api.get(f"/api/projects/{p['id']}").json()
    assert got["title"] == "P" and got["forge_policy"]["max_followups"] == 1  # nothing changed
    r = api.patch(f"/api/projects/{p['id']}", json={"forge_policy": {"auto_pr": None}})
    assert r.json()["forge_policy"]["auto_pr"] is True  # back to the default
