"""The /autopilots pages (issue 27 §5) over HTTP: the list, one autopilot with its triggers, its
history and — when it paused itself — why; owners and admins get Pause, Resume and Fire now (the
same use cases as the API), members see the pages without them and are refused the posts."""

from __future__ import annotations

from starlette.testclient import TestClient

from predictorx.server.app import create_app
from predictorx.service.autopilot_webhook import signature


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_pages_show_autopilots_their_history_and_why_one_paused(client, token, web_db):
    made = client.post("/api/autopilots", headers=_bearer(token), json={
        "name": "triage", "title": "Triage {{date}}", "webhook": True, "cron": "0 9 * * 1-5",
        "timezone": "Europe/Berlin", "filter": "action=opened"}).json()
    body = b'{"action": "opened"}'
    hook = made["webhook_url"].removeprefix("http://testserver")
    r = client.post(hook, content=body, headers={"X-Delivery-Key": "k1",
                                                 "X-Signature-256": signature(made["signing_secret"], "k1", body)})
    assert r.json()["fired"], r.text

    listing = client.get("/autopilots")
    assert listing.status_code == 200 and 'href="/autopilots"' in listing.text
    assert f'href="/autopilots/{made["id"]}"' in listing.text and "0 9 * * 1-5" in listing.text
    page = client.get(f"/autopilots/{made['id']}")
    assert page.status_code == 200
    assert made["webhook_url"] in page.text and made["signing_secret"] not in page.text
    assert "action=&#34;opened&#34;" in page.text or 'action="opened"' in page.text
    assert 'data-outcome="created"' in page.text and f'href="/issues/{r.json()["issue_number"]}"' in page.text
    assert 'id="autopilot-pause"' in page.text and 'id="autopilot-fire"' in page.text

    fired = client.post(f"/autopilots/{made['id']}/fire", follow_redirects=False)
    assert fired.status_code == 303 and fired.headers["location"] == f"/autopilots/{made['id']}"
    assert client.get(f"/autopilots/{made['id']}").text.count('data-outcome="created"') == 2
    assert client.post(f"/autopilots/{made['id']}/pause", follow_redirects=False).status_code == 303
    paused = client.get(f"/autopilots/{made['id']}").text
    assert 'id="autopilot-paused"' in paused and "paused by a person" in paused and 'id="autopilot-resume"' in paused
    assert "paused" in client.get("/autopilots").text
    assert client.post(f"/autopilots/{made['id']}/resume", follow_redirects=False).status_code == 303
    assert 'id="autopilot-paused"' not in client.get(f"/autopilots/{made['id']}").text
    assert client.get("/autopilots/no-such-one").status_code == 404


def test_members_see_the_pages_without_the_buttons_and_are_refused_the_posts(client, token, web_db):
    made = client.post("/api/autopilots", headers=_bearer(token), json={
        "name": "weekly", "title": "Weekly", "cron": "0 9 * * 1"}).json()
    ws = client.get("/api/workspaces", headers=_bearer(token)).json()[0]["id"]
    mia = client.post(f"/api/workspaces/{ws}/members", headers=_bearer(token),
                      json={"name": "mia", "role": "member"}).json()["token"]
    with TestClient(create_app(web_db, migrate=False), follow_redirects=False,
                    headers={"Origin": "http://testserver"}, cookies={"px_token": mia}) as member:
        page = member.get(f"/autopilots/{made['id']}")
        assert page.status_code == 200 and "Weekly" in page.text and 'id="autopilot-fire"' not in page.text
        for action in ("pause", "resume", "fire"):
            assert member.post(f"/autopilots/{made['id']}/{action}").status_code == 403
    assert client.get(f"/api/autopilots/{made['id']}", headers=_bearer(token)).json()["firings"] == []
