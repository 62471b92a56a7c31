"""An agent's Variables and secrets page and Settings → Audit log over HTTP: its owner sets a
secret through the form and no page ever shows the value back (not even with a refusal); a
member who does not own the agent neither reads nor sets; the audit page is for owners and
admins only, linked from the sidebar for them alone."""

from __future__ import annotations

import uuid

SECRET = "sk-page-" + uuid.uuid4().hex


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_owner_sets_through_the_form_and_no_page_shows_the_value(client, token):
    agent = client.post("/api/agents", headers=_bearer(token), json={
        "name": "bot", "provider": "command", "command": ["true"]}).json()
    page = f"/agents/{agent['id']}/env"
    assert client.get(page).status_code == 200 and 'id="set-env"' in client.get(page).text
    assert f'href="{page}"' in client.get("/agents").text
    r = client.post(page, data={"name": "API_KEY", "value": SECRET, "secret": "on"})
    assert r.status_code == 303 and r.headers["location"] == page
    shown = client.get(page).text
    assert "API_KEY" in shown and "…" + SECRET[-4:] in shown and SECRET not in shown
    refused = client.post(page, data={"name": "PATH", "value": SECRET, "secret": "on"})
    assert refused.status_code == 422 and "PATH" in refused.text and SECRET not in refused.text
    assert client.post(page, data={"name": "COLOR", "value": "blue"}).status_code == 303  # unticked: plain
    assert "<code>blue</code>" in client.get(page).text
    assert client.post(f"{page}/COLOR/remove").status_code == 303
    assert "COLOR" not in client.get(page).text
    for path in ("/agents", "/", page, "/audit"):
        assert SECRET not in client.get(path).text, path

    ws = client.get("/api/workspaces", headers=_bearer(token)).json()[0]["id"]
    member = client.post(f"/api/workspaces/{ws}/members", headers=_bearer(token),
                         json={"name": "mia", "role": "member"}).json()["token"]
    client.cookies.set("px_token", member)
    assert client.get(page).status_code == 403
    assert client.post(page, data={"name": "API_KEY", "value": "mia-was-here-123", "secret": "on"}).status_code == 403
    assert client.post(f"{page}/API_KEY/remove").status_code == 403
    assert client.get("/audit").status_code == 403 and 'href="/audit"' not in client.get("/agents").text
    client.cookies.set("px_token", token)
    audit = client.get("/audit")
    assert audit.status_code == 200 and 'href="/audit"' in audit.text
    assert "secret.set" in audit.text and "secret.unset" in audit.text and "member.add" in audit.text
    assert 'data-action="secret.set"' in client.get("/audit", params={"action": "secret"}).text


def test_the_grant_form_offers_and_takes_no_runtime_setting(client, token, web_db):
    """envnames.py: a workspace secret named like a runtime setting (one stored before the check)
    is not offered for a grant, a grant of one is refused with why, and the page says it is held back."""
    from predictorx.service import agentenv
    from predictorx.store.schema import EnvGrant

    agent = client.post("/api/agents", headers=_bearer(token), json={
        "name": "bot", "provider": "command", "command": ["true"]}).json()
    page = f"/agents/{agent['id']}/env"
    assert client.put("/api/secrets/ANTHROPIC_API_KEY", headers=_bearer(token), json={"value": SECRET}).status_code == 200
    with web_db.write() as s:  # what the old code let an admin store and grant
        old, _ = agentenv._store(s, agent["workspace_id"], agentenv.WORKSPACE, None, "NODE_OPTIONS", SECRET, True, None)
        agentenv._store(s, agent["workspace_id"], agentenv.WORKSPACE, None, "ANTHROPIC_MODEL", SECRET, True, None)
        s.add(EnvGrant(agent_id=agent["id"], env_var_id=old.id))
        agentenv._recount(s, [agent["id"]])
    form = client.get(page).text
    assert "<option>ANTHROPIC_API_KEY</option>" in form and "<option>ANTHROPIC_MODEL</option>" not in form
    assert "not given to its runs" in form  # the older grant of NODE_OPTIONS
    refused = client.post(f"/agents/{agent['id']}/grants", data={"name": "ANTHROPIC_MODEL"})
    assert refused.status_code == 422 and "only its owner" in refused.text and SECRET not in refused.text
    assert client.post(f"/agents/{agent['id']}/grants", data={"name": "ANTHROPIC_API_KEY"}).status_code == 303
