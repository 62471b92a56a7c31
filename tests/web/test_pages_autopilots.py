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


def test_an_owner_makes_an_autopilot_from_the_page_through_the_apis_use_case(client, token, web_db):
    client.post("/api/agents", headers=_bearer(token), json={"name": "nightly-bot", "provider": "command",
                                                             "command": ["true"]})
    page = client.get("/autopilots").text
    assert 'id="new-autopilot"' in page and '<option value="nightly-bot"' in page
    made = client.post("/autopilots", data={"name": "nightly-deps", "title": "Dependency check {{date}}",
                                            "description": "Update the lock file.", "assignee": "nightly-bot",
                                            "cron": "30 2 * * *", "timezone": "Europe/Berlin"})
    assert made.status_code == 303, made.text
    shown = client.get("/api/autopilots/nightly-deps", headers=_bearer(token)).json()
    assert made.headers["location"] == f"/autopilots/{shown['id']}"
    assert (shown["cron"], shown["timezone"], shown["assignee"], shown["title"]) == (
        "30 2 * * *", "Europe/Berlin", "nightly-bot", "Dependency check {{date}}")
    assert shown["webhook_url"] is None and shown["next_due_at"]


def test_a_webhook_autopilot_made_on_the_page_shows_its_secret_once_and_it_signs(client, token, web_db):
    answer = client.post("/autopilots", data={"name": "triage", "title": "Triage", "webhook": "on",
                                              "filter": "action=opened"})
    assert answer.status_code == 200 and 'id="autopilot-secret"' in answer.text
    secret = answer.text.split('id="autopilot-secret-value"', 1)[0].rsplit('value="', 1)[1].split('"', 1)[0]
    made = client.get("/api/autopilots/triage", headers=_bearer(token)).json()
    assert secret and secret not in client.get(f"/autopilots/{made['id']}").text  # once
    body = b'{"action": "opened"}'
    fired = client.post(made["webhook_url"].removeprefix("http://testserver"), content=body,
                        headers={"X-Delivery-Key": "k1", "X-Signature-256": signature(secret, "k1", body)})
    assert fired.status_code == 200 and fired.json()["fired"]


def test_a_refused_autopilot_is_said_next_to_the_form_with_what_was_typed(client, token, web_db):
    typed = {"name": "bad-cron", "title": "Weekly {{date}}", "description": "keep me", "cron": "every monday",
             "timezone": "Europe/Berlin"}
    r = client.post("/autopilots", data=typed)
    assert r.status_code == 422
    form = r.text.split('id="new-autopilot"', 1)[1]
    assert 'role="alert"' in form.split("</h2>", 1)[1][:300] and "is not a cron expression" in form
    for value in ("bad-cron", "Weekly {{date}}", "keep me", "every monday", "Europe/Berlin"):
        assert f'value="{value}"' in form or f">{value}</textarea>" in form, value
    for data, said in (({"name": "x", "title": "T"}, "needs a trigger"),
                       ({"name": "x", "title": "T", "cron": "* * * * *", "timezone": "Mars/Base"}, "unknown time zone"),
                       ({"name": "x", "title": "T", "cron": "* * * * *", "role": "reviewer"}, "resolved in a project"),
                       ({"name": "x", "title": "T {{nope}}", "cron": "* * * * *"}, "nope"),
                       ({"name": "", "title": "T", "cron": "* * * * *"}, "name")):
        r = client.post("/autopilots", data=data)
        assert r.status_code in (400, 404, 409, 422) and said in r.text, (data, r.status_code)
        assert 'id="new-autopilot"' in r.text
    assert client.get("/api/autopilots", headers=_bearer(token)).json() == []


def test_members_get_no_form_and_are_refused_making_one(client, token, web_db):
    ws = client.get("/api/workspaces", headers=_bearer(token)).json()[0]["id"]
    mia = client.post(f"/api/workspaces/{ws}/members", headers=_bearer(token),
                      json={"name": "mia", "role": "member"}).json()["token"]
    with TestClient(create_app(web_db, migrate=False), follow_redirects=False,
                    headers={"Origin": "http://testserver"}, cookies={"px_token": mia}) as member:
        assert 'id="new-autopilot"' not in member.get("/autopilots").text
        r = member.post("/autopilots", data={"name": "sneaky", "title": "T", "cron": "* * * * *"})
        assert r.status_code == 403
    assert client.get("/api/autopilots", headers=_bearer(token)).json() == []


def test_an_owner_changes_the_schedule_on_the_autopilots_page(client, token, web_db):
    made = client.post("/api/autopilots", headers=_bearer(token), json={
        "name": "weekly", "title": "Weekly", "cron": "0 9 * * 1"}).json()
    page = client.get(f"/autopilots/{made['id']}").text
    assert 'id="autopilot-schedule"' in page and 'value="0 9 * * 1"' in page
    bad = client.post(f"/autopilots/{made['id']}/schedule", data={"cron": "mondays", "timezone": "Europe/Berlin"})
    assert bad.status_code == 422 and "not a cron expression" in bad.text
    form = bad.text.split('id="autopilot-schedule"', 1)[1]
    assert 'role="alert"' in form and 'value="mondays"' in form and 'value="Europe/Berlin"' in form
    ok = client.post(f"/autopilots/{made['id']}/schedule", data={"cron": "0 8 * * 1-5", "timezone": "Europe/Berlin"})
    assert ok.status_code == 303
    shown = client.get("/api/autopilots/weekly", headers=_bearer(token)).json()
    assert (shown["cron"], shown["timezone"]) == ("0 8 * * 1-5", "Europe/Berlin")
