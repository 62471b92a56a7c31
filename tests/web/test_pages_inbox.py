"""The inbox, budgets and notifications pages over HTTP (issue 27 §2–4): the inbox lists the
person's items and marks them; another member's item is 404; the sidebar's count; the issue page's
Subscribe button; Settings → Budgets sets and removes a budget for owners and admins (audited, as
the CLI's), members see it without the form and are refused; Settings → Notifications adds a
webhook whose server-made secret is shown once and whose URL is never shown."""

from __future__ import annotations

from starlette.testclient import TestClient

from predictorx.server.app import create_app


def make_client(web_db, token: str) -> TestClient:
    """Another person's browser (as conftest's `client` is the owner's)."""
    client = TestClient(create_app(web_db, migrate=False), client=("testclient", 50000), follow_redirects=False,
                        headers={"Origin": "http://testserver"})
    client.cookies.set("px_token", token)
    return client


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _member(client, token: str, name: str, role: str = "member") -> str:
    ws = client.get("/api/workspaces", headers=_bearer(token)).json()[0]["id"]
    return client.post(f"/api/workspaces/{ws}/members", headers=_bearer(token),
                       json={"name": name, "role": role}).json()["token"]


def test_the_inbox_page_lists_and_marks_your_items_only(client, token, web_db):
    mia = _member(client, token, "mia")
    number = client.post("/api/issues", headers=_bearer(token), json={"title": "Docs", "assignee": "mia"}).json()["number"]
    with make_client(web_db, mia) as as_mia:
        page = as_mia.get("/inbox")
        assert page.status_code == 200 and 'data-kind="assigned"' in page.text
        assert f"#{number} is assigned to you: Docs" in page.text
        assert 'id="inbox-count"' in page.text and 'href="/inbox"' in page.text
        assert as_mia.get("/inbox/count").text.strip().startswith('<span class="inbox-count">1<')
        item_id = as_mia.get("/api/inbox", headers=_bearer(mia)).json()["items"][0]["id"]
        # the owner can neither see nor mark it
        assert client.post(f"/inbox/{item_id}", data={"state": "done"}).status_code == 404
        assert item_id not in client.get("/inbox?state=all").text
        r = as_mia.post(f"/inbox/{item_id}", data={"state": "read", "shown": "open"}, headers={"HX-Request": "true"})
        assert r.status_code == 200 and 'class="inbox-item is-read"' in r.text
        assert as_mia.get("/inbox/count").text.strip() == ""
        r = as_mia.post(f"/inbox/{item_id}", data={"state": "done", "shown": "open"}, headers={"HX-Request": "true"})
        assert r.status_code == 200 and r.text == ""  # it leaves the open list
        assert "Nothing needs you." in as_mia.get("/inbox").text
        assert 'data-kind="assigned"' in as_mia.get("/inbox?state=done").text
        assert as_mia.post(f"/inbox/{item_id}", data={"state": "soon"}).status_code == 422
        # the issue page's Subscribe button: mia is subscribed as its assignee, and unsubscribes
        assert 'hx-get="/issues/1/subscription"' in as_mia.get(f"/issues/{number}").text
        button = as_mia.get(f"/issues/{number}/subscription").text
        assert "Unsubscribe" in button and "(assignee)" in button
        r = as_mia.post(f"/issues/{number}/subscription", data={"subscribed": "0"}, headers={"HX-Request": "true"})
        assert ">Subscribe<" in r.text and "not subscribed" in r.text
        assert as_mia.get(f"/api/issues/{number}/subscription", headers=_bearer(mia)).json()["subscribed"] is False


def test_budgets_page_sets_and_removes_for_admins_and_is_read_only_for_members(client, token, web_db):
    r = client.post("/budgets", data={"scope": "workspace", "period": "day", "metric": "cost", "limit": "20",
                                      "action": "stop"}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and "$20.00 a day" in r.text and "stop (hard)" in r.text
    [budget] = client.get("/api/budgets", headers=_bearer(token)).json()
    r = client.post("/budgets", data={"scope": "agent", "target": "nobody", "limit": "5"}, headers={"HX-Request": "true"})
    assert r.status_code == 404 and 'role="alert"' in r.text
    assert client.post("/budgets", data={"limit": "lots"}, headers={"HX-Request": "true"}).status_code == 422
    events = [e["action"] for e in client.get("/api/audit", headers=_bearer(token)).json()["events"]]
    assert "budget.set" in events
    member = _member(client, token, "mia")
    with make_client(web_db, member) as as_mia:
        page = as_mia.get("/budgets")
        assert page.status_code == 200 and "$20.00 a day" in page.text and 'id="new-budget"' not in page.text
        assert as_mia.post("/budgets", data={"limit": "1"}).status_code == 403
        assert as_mia.post(f"/budgets/{budget['id']}/remove").status_code == 403
    r = client.post(f"/budgets/{budget['id']}/remove", headers={"HX-Request": "true"})
    assert r.status_code == 200 and 'id="no-budgets"' in r.text
    assert "budget.remove" in [e["action"] for e in client.get("/api/audit", headers=_bearer(token)).json()["events"]]


def test_notifications_page_shows_a_made_secret_once_and_never_the_url(client, token, web_db):
    url = "https://hooks.example.org/services/T000/B000/XXXXSECRETPATH"
    r = client.post("/notifications", data={"name": "team", "kind": "webhook", "url": url, "digest": "hourly",
                                            "events": ["run_failed", "run_budget"], "scope": "workspace"},
                    headers={"HX-Request": "true"})
    assert r.status_code == 200 and 'id="signing-secret-value"' in r.text
    secret = r.text.split('id="signing-secret-value"')[0].rsplit('value="', 1)[1].split('"')[0]
    assert len(secret) >= 32
    page = client.get("/notifications").text
    assert "team" in page and "https://hooks.example.org/…" in page and "XXXXSECRETPATH" not in page
    assert secret not in page and "run failed, run budget" in page
    [channel] = client.get("/api/notifications/channels", headers=_bearer(token)).json()
    assert channel["scope"] == "workspace" and channel["digest"] == "hourly"
    assert 'id="deliveries"' not in client.get(f"/notifications/{channel['id']}").text  # nothing sent yet
    member = _member(client, token, "mia")
    with make_client(web_db, member) as as_mia:
        page = as_mia.get("/notifications").text
        assert "team" in page and f'action="/notifications/{channel["id"]}/remove"' not in page
        r = as_mia.post("/notifications", data={"name": "x", "kind": "webhook", "url": "https://e.org/h",
                                                "scope": "workspace"}, headers={"HX-Request": "true"})
        assert r.status_code == 403 and "only an owner or admin" in r.text
        assert as_mia.post(f"/notifications/{channel['id']}/remove").status_code == 403
        r = as_mia.post("/notifications", data={"name": "mine", "kind": "apprise", "url": "nonsense://x"},
                        headers={"HX-Request": "true"})
        assert r.status_code == 422 and "not an Apprise URL" in r.text
    r = client.post(f"/notifications/{channel['id']}/remove", headers={"HX-Request": "true"})
    assert r.status_code == 200 and 'id="no-channels"' in r.text
    assert {"notify.add", "notify.remove"} <= {e["action"] for e in client.get("/api/audit", headers=_bearer(token)).json()["events"]}


def test_notifications_page_refuses_a_url_that_is_no_url_and_keeps_what_was_typed(client, token, web_db):
    """The sentence of service/notify_channels.check_url, next to the form (422, never a 500); the
    name, kind, digest and events stay as typed (the URL is write-only: never sent back); nothing is stored."""
    for kind, url, said in (("webhook", "http://[::1", "malformed"), ("webhook", "https://h:99999/", "1 to 65535"),
                            ("apprise", "mailto://u:p@example.com?smtp=[::1", "smtp=")):
        r = client.post("/notifications", data={"name": "my hook", "kind": kind, "url": url, "digest": "daily",
                                                "events": ["review", "mention"]}, headers={"HX-Request": "true"})
        assert r.status_code == 422 and said in r.text, r.text
        assert 'value="my hook"' in r.text and f'<option value="{kind}" selected>' in r.text
        assert '<option value="daily" selected>' in r.text and url not in r.text
        assert 'value="review" checked' in r.text and 'value="mention" checked' in r.text
        assert 'value="run_failed" checked' not in r.text
    assert client.get("/api/notifications/channels", headers=_bearer(token)).json() == []
    page = client.get("/notifications").text
    assert 'id="no-channels"' in page and 'value="run_failed" checked' in page  # a fresh form: every event
