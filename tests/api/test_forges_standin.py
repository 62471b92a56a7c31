"""Forge connections with the real clients (forges/github.py, gitlab.py, gitea.py) against the
loopback stand-ins (tests/forgestand), each held to its forge's published API description: a
connection added with the forge's web root finds its API by the kind's default, `test` answers
the account the token acts as, a refused token comes back with the forge's own sentence, and a
repository's clone URL maps to the connection."""

from __future__ import annotations

from forgestand.fixtures import any_standin, forge_standin_factory  # noqa: F401  (fixtures)

from predictorx.service import forges


def test_a_connection_to_each_forge_kind(api, db, any_standin):  # noqa: F811
    s = any_standin
    repo = s.create_repo("team/app" if s.kind != "gitlab" else "group/sub/app")
    r = api.post("/api/forges", json={"kind": s.kind, "name": s.kind, "base_url": s.base_url + "/",
                                      "credential": s.token})
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["api_url"] == s.api_url and s.token not in r.text

    r = api.post(f"/api/forges/{made['id']}/test")
    assert r.status_code == 200, r.text
    assert r.json()["account"] == s.login

    with db.read() as session:
        row, ref = forges.connection_for_url(session, made["workspace_id"], repo.clone_url)
        assert row.id == made["id"] and ref.path == repo.path
        assert forges.connection_of(row).git_username in (s.git_username, "predictorx")

    r = api.patch(f"/api/forges/{made['id']}", json={"credential": "not-the-token-0000"})
    assert r.status_code == 200
    r = api.post(f"/api/forges/{made['id']}/test")
    assert r.status_code == 422, r.text
    said = {"github": "Bad credentials", "gitlab": "401 Unauthorized", "gitea": "token is required",
            "forgejo": "token is required"}[s.kind]  # each forge's own words, as its stand-in says them
    assert "the forge refused" in r.json()["detail"] and said in r.json()["detail"], r.text
    assert "not-the-token" not in r.text
