"""Settings over HTTP (issue 26 §5): the workspace's name, members and roles, a person's tokens —
each through the use case the API and CLI call (same refusals, same audit records), each control
offered only where the service would accept it, a token shown once."""

from __future__ import annotations

import re

from predictorx.server.web.settings_places import SETTINGS_PLACES

HX = {"HX-Request": "true"}


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _ws(client, token: str) -> str:
    return client.get("/api/workspaces", headers=_bearer(token)).json()[0]["id"]


def _add(client, token: str, name: str, role: str) -> dict:
    ws = _ws(client, token)
    return client.post(f"/api/workspaces/{ws}/members", headers=_bearer(token), json={"name": name, "role": role}).json()


def _audit(client, token: str) -> list[str]:
    return [e["action"] for e in client.get("/api/audit", headers=_bearer(token)).json()["events"]]


def test_the_page_is_linked_in_the_sidebar_and_links_every_settings_place(client):
    page = client.get("/settings")
    assert page.status_code == 200
    assert 'href="/settings"' in client.get("/").text
    for place in SETTINGS_PLACES:  # the owner sees them all; the list is the one place they are kept
        assert f'href="{place.href}"' in page.text, place


def test_an_owner_renames_the_workspace_through_the_service_the_api_uses(client, token):
    r = client.post("/settings/workspace", data={"name": "Shop team"}, headers=HX)
    assert r.status_code == 200 and "Workspace renamed." in r.text
    assert client.get(f"/api/workspaces/{_ws(client, token)}", headers=_bearer(token)).json()["name"] == "Shop team"
    empty = client.post("/settings/workspace", data={"name": "  "}, headers=HX)
    assert empty.status_code == 422 and 'role="alert"' in empty.text
    assert client.get(f"/api/workspaces/{_ws(client, token)}", headers=_bearer(token)).json()["name"] == "Shop team"


def test_invite_shows_the_new_persons_token_once_and_it_works(client, token):
    r = client.post("/settings/members", data={"name": "nina", "email": "nina@example.org", "role": "admin"},
                    headers=HX)
    assert r.status_code == 200 and "shown once" in r.text
    raw = re.search(r'value="([^"]+)" id="shown-token"', r.text).group(1)
    me = client.get("/api/me", headers=_bearer(raw)).json()
    assert me["kind"] == "user" and me["user"]["name"] == "nina"
    assert raw not in client.get("/settings").text  # never again
    assert 'data-member="nina"' in client.get("/settings").text
    assert "member.add" in _audit(client, token)
    again = client.post("/settings/members", data={"name": "nina2", "email": "nina@example.org"}, headers=HX)
    assert again.status_code == 409 and "already a member" in again.text


def test_role_change_and_removal_are_the_services_and_audited(client, token):
    mia = _add(client, token, "mia", "member")
    r = client.post(f"/settings/members/{mia['user_id']}/role", data={"role": "admin"}, headers=HX)
    assert r.status_code == 200 and "Role changed." in r.text
    members = client.get(f"/api/workspaces/{_ws(client, token)}/members", headers=_bearer(token)).json()
    assert {m["name"]: m["role"] for m in members}["mia"] == "admin"
    r = client.post(f"/settings/members/{mia['user_id']}/remove", headers=HX)
    assert r.status_code == 200 and 'data-member="mia"' not in r.text
    assert client.get("/api/me", headers=_bearer(mia["token"])).status_code == 401  # their token went with them
    assert {"member.role", "member.remove"} <= set(_audit(client, token))


def test_the_last_owner_is_offered_no_removal_or_demotion_and_the_service_refuses_it(client, token):
    owner_id = client.get("/api/me", headers=_bearer(token)).json()["user"]["id"]
    page = client.get("/settings").text
    row = page[page.index('data-member="'):]
    row = row[:row.index("</tr>")]
    assert "Remove" not in row and "Change role" not in row and "last owner" in row
    refused = client.post(f"/settings/members/{owner_id}/remove", headers=HX)
    assert refused.status_code == 409 and "last owner" in refused.text
    demoted = client.post(f"/settings/members/{owner_id}/role", data={"role": "member"}, headers=HX)
    assert demoted.status_code == 409 and "last owner" in demoted.text


def test_an_admin_gets_no_controls_for_an_owner_and_a_member_none_at_all(client, token):
    admin = _add(client, token, "ada", "admin")
    member = _add(client, token, "max", "member")
    owner_id = client.get("/api/me", headers=_bearer(token)).json()["user"]["id"]
    client.cookies.set("px_token", admin["token"])  # the same browser, signed in as the admin
    page = client.get("/settings").text
    owner_row = re.search(r'<tr data-member="[^"]+"><td class="strong">[^<]*</td>.*?</tr>', page, re.S).group(0)
    assert "Remove" not in owner_row and "an owner manages this" in owner_row
    assert f'/settings/members/{member["user_id"]}/remove' in page
    assert '<option value="owner">' not in page  # an admin neither invites nor promotes owners
    r = client.post(f"/settings/members/{owner_id}/remove", headers=HX)
    assert r.status_code == 403 and "only an owner" in r.text
    client.cookies.set("px_token", member["token"])
    page = client.get("/settings")
    assert page.status_code == 200 and 'data-member="ada"' in page.text
    assert 'id="invite-form"' not in page.text and "/remove" not in page.text and 'id="ws-name"' not in page.text
    assert "@" not in re.search(r'<table class="table" id="members">.*?</table>', page.text, re.S).group(0)
    assert 'href="/audit"' not in page.text.split('aria-label="More settings"')[1].split("</nav>")[0]
    for path in ("/settings/workspace", "/settings/members", f"/settings/members/{admin['user_id']}/role",
                 f"/settings/members/{admin['user_id']}/remove"):
        assert client.post(path, data={"name": "x", "role": "admin"}).status_code == 403, path
    client.cookies.set("px_token", token)


def test_a_personal_token_is_shown_once_and_revoked_from_the_page(client, token):
    r = client.post("/settings/tokens", data={"name": "laptop CLI", "days": "30"}, headers=HX)
    assert r.status_code == 200 and "shown once" in r.text
    raw = re.search(r'value="([^"]+)" id="shown-token"', r.text).group(1)
    assert client.get("/api/me", headers=_bearer(raw)).status_code == 200
    page = client.get("/settings").text
    assert raw not in page and 'data-token="laptop CLI"' in page
    [tok] = [t for t in client.get("/api/tokens", headers=_bearer(token)).json() if t["name"] == "laptop CLI"]
    assert tok["expires_at"]
    r = client.post(f"/settings/tokens/{tok['id']}/revoke", headers=HX)
    assert r.status_code == 200 and "Token revoked." in r.text and 'data-token="laptop CLI"' not in r.text
    assert client.get("/api/me", headers=_bearer(raw)).status_code == 401
    assert {"token.create", "token.revoke"} <= set(_audit(client, token))
    bad = client.post("/settings/tokens", data={"name": "x", "days": "soon"}, headers=HX)
    assert bad.status_code == 422 and "whole number" in bad.text
    gone = client.post(f"/settings/tokens/{tok['id']}/revoke", headers=HX)
    assert gone.status_code == 200  # revoking twice: already gone, nothing to say twice


def test_a_plain_form_post_shows_the_token_on_the_page_it_answers(client):
    r = client.post("/settings/tokens", data={"name": "script"})
    assert r.status_code == 200 and "<aside" in r.text and 'id="shown-token"' in r.text
