"""Settings → Audit log says how long events are kept, and its owners change it there (the same
use case as `PUT /api/audit/retention`): a value under the server's floor is refused in words with
the page kept; an admin reads the setting but gets no form, and a forged post is refused."""

from __future__ import annotations

from html import unescape


def test_owners_set_the_retention_from_the_audit_page(client, token):
    page = client.get("/audit")
    assert page.status_code == 200 and 'id="audit-retention"' in page.text
    assert "the server's default" in unescape(page.text) and 'action="/audit/retention"' in page.text
    refused = client.post("/audit/retention", data={"keep": "days", "days": "3"})
    assert refused.status_code == 422 and "at least 30 days" in refused.text and 'id="audit"' in refused.text
    bad = client.post("/audit/retention", data={"keep": "days", "days": "ninety"})
    assert bad.status_code == 422 and "whole number" in bad.text
    done = client.post("/audit/retention", data={"keep": "days", "days": "120"})
    assert done.status_code == 303 and done.headers["location"] == "/audit"
    shown = unescape(client.get("/audit").text)
    assert "Events are kept 120 days" in shown and "this workspace's setting" in shown
    assert 'data-action="audit.retention"' in shown
    assert client.post("/audit/retention", data={"keep": "forever"}).status_code == 303
    assert "Events are kept for ever" in client.get("/audit").text

    ws = client.get("/api/workspaces", headers={"Authorization": f"Bearer {token}"}).json()[0]["id"]
    admin = client.post(f"/api/workspaces/{ws}/members", headers={"Authorization": f"Bearer {token}"},
                        json={"name": "ada", "role": "admin"}).json()["token"]
    client.cookies.set("px_token", admin)
    as_admin = client.get("/audit").text
    assert "Events are kept for ever" in as_admin and 'action="/audit/retention"' not in as_admin
    assert client.post("/audit/retention", data={"keep": "server"}).status_code == 403
