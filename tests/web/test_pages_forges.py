"""Settings → Forges over HTTP: members see the list without forms or secrets, only owners and
admins change anything, and no page ever carries a token or a webhook secret."""

from __future__ import annotations

import re

import pytest

from forge_testkit import GOOD_TOKEN, KIND, registered_kit_forge


@pytest.fixture(autouse=True)
def testforge():
    with registered_kit_forge() as forge:
        yield forge


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_members_see_the_list_only_and_no_page_shows_a_secret(client, token):
    made = client.post("/api/forges", headers=_bearer(token), json={
        "kind": KIND, "name": "gh", "base_url": "https://forge.test", "credential": GOOD_TOKEN}).json()
    ws = client.get("/api/workspaces", headers=_bearer(token)).json()[0]["id"]
    member = client.post(f"/api/workspaces/{ws}/members", headers=_bearer(token),
                         json={"name": "mia", "role": "member"}).json()["token"]

    owner_page = client.get("/forges")
    assert owner_page.status_code == 200 and 'id="new-forge"' in owner_page.text
    assert f"set, ••••{GOOD_TOKEN[-4:]}" in owner_page.text
    assert GOOD_TOKEN not in owner_page.text and made["webhook_secret"] not in owner_page.text
    assert 'href="/forges"' in client.get("/").text  # linked from the sidebar

    client.cookies.set("px_token", member)  # the same browser, signed in as the member
    page = client.get("/forges")
    assert page.status_code == 200 and "gh" in page.text
    assert 'id="new-forge"' not in page.text and "Remove gh" not in page.text
    assert GOOD_TOKEN not in page.text and made["webhook_secret"] not in page.text
    for path in ("/forges", f"/forges/{made['id']}", f"/forges/{made['id']}/remove",
                 f"/forges/{made['id']}/test", f"/forges/{made['id']}/webhook-secret"):
        r = client.post(path, data={"name": "x"})
        assert r.status_code == 403, (path, r.status_code)
    client.cookies.set("px_token", token)
    assert [c["name"] for c in client.get("/api/forges", headers=_bearer(token)).json()] == ["gh"]


def test_a_rotated_secret_is_shown_once_on_the_page(client):
    client.post("/forges", data={"kind": KIND, "name": "gh", "base_url": "https://forge.test",
                                 "credential": GOOD_TOKEN}, headers={"HX-Request": "true"})
    [row] = client.get("/api/forges").json()
    r = client.post(f"/forges/{row['id']}/webhook-secret", headers={"HX-Request": "true"})
    assert r.status_code == 200 and "shown once" in r.text
    shown = re.search(r'value="([^"]+)" id="webhook-secret-value"', r.text).group(1)
    assert len(shown) >= 40
    assert shown not in client.get("/forges").text


def test_a_plain_form_post_shows_the_secret_on_the_page_it_answers(client):
    """Without htmx (no script) the answer to "Add" is the page itself: a redirect would lose the
    only showing of the webhook secret."""
    r = client.post("/forges", data={"kind": KIND, "name": "gh", "base_url": "https://forge.test",
                                     "credential": GOOD_TOKEN})
    assert r.status_code == 200 and "shown once" in r.text and GOOD_TOKEN not in r.text
    assert re.search(r'value="([^"]{40,})" id="webhook-secret-value"', r.text)
