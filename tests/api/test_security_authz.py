"""Regression tests for issue 8's account, role and identity findings (R-SEC-2, -4, -5, -6).

Each test is named after the finding it proves fixed and fails on the code before the fix.
"""

from __future__ import annotations

import asyncio
import uuid

from predictorx.server.hub import Hub


def _ws(api) -> str:
    return api.get("/api/workspaces").json()[0]["id"]


def _add(api, name: str, role: str = "member", email: str | None = None):
    r = api.post(f"/api/workspaces/{_ws(api)}/members", json={"name": name, "role": role, "email": email})
    assert r.status_code == 201, r.text
    body = r.json()
    return body["user_id"], (api.as_(body["token"]) if body.get("token") else None)


def _register(api, daemon_id: str | None = None, providers=("command",)):
    did = daemon_id or str(uuid.uuid4())
    r = api.post("/api/daemon/register", json={"daemon_id": did, "name": f"host-{did[:4]}",
                                               "runtimes": [{"provider": p} for p in providers]})
    return did, r


def _prove_email(api, user_id: str) -> None:
    from predictorx.store.schema import User

    with api.client.app.state.px.write() as s:
        user = s.get(User, user_id)
        assert user is not None
        user.email_proven = True


def test_finding_01_account_takeover_by_email(api):
    # An admin of the owner's workspace, with an email.
    alice_id, admin = _add(api, "alice", role="admin", email="alice@example.com")
    _prove_email(api, alice_id)  # (she signed in through the provider: an e-mail typed by an adder
    # is not attached elsewhere at all, tests/api/test_email_takeover.py)
    # A plain member makes their own workspace and "adds" alice by her email there.
    _, mallory = _add(api, "mallory")
    ws2 = mallory.post("/api/workspaces", json={"name": "Mallory's"}).json()["id"]
    r = mallory.post(f"/api/workspaces/{ws2}/members", json={"name": "x", "email": "alice@example.com"})
    assert r.status_code == 201, r.text
    assert r.json()["token"] is None  # attached without a token: never a key to someone else's account
    assert "already has an account" in r.json()["note"]
    # Emails are for owners and admins only.
    ws = _ws(api)
    seen_by_member = mallory.get(f"/api/workspaces/{ws}/members").json()
    assert all("email" not in m for m in seen_by_member)
    seen_by_admin = admin.get(f"/api/workspaces/{ws}/members").json()
    assert {m["name"]: m.get("email") for m in seen_by_admin}["alice"] == "alice@example.com"
    # Alice is in Mallory's workspace now, but Mallory holds nothing that acts as Alice.
    assert admin.get("/api/projects", headers={"X-Workspace": ws2}).status_code == 200


def test_finding_03_daemon_identity_hijack(api):
    owner_daemon, r = _register(api)
    assert r.status_code == 200
    owner_daemon_token = api.as_(r.json()["token"])
    _, mallory = _add(api, "mallory")
    # The listing shows the id (members need it for folders) but no path on the owner's machine.
    listed = mallory.get("/api/daemons").json()
    assert [d["id"] for d in listed] == [owner_daemon]
    assert all(rt["path"] is None for rt in listed[0]["runtimes"]) and listed[0]["mine"] is False
    # Registering someone else's daemon id: 403, and nothing of the daemon changes.
    _, hijack = _register(mallory, owner_daemon, providers=("claude",))
    assert hijack.status_code == 403 and "another member" in hijack.json()["detail"]
    assert [rt["provider"] for rt in api.get(f"/api/daemons/{owner_daemon}").json()["runtimes"]] == ["command"]
    assert owner_daemon_token.post("/api/daemon/heartbeat", json={"task_ids": []}).status_code == 200
    # A daemon token registers only its own id, and re-registration keeps its token.
    other = str(uuid.uuid4())
    assert _register(owner_daemon_token, other)[1].status_code == 403
    again = _register(owner_daemon_token, owner_daemon)[1]
    assert again.status_code == 200 and again.json()["token"] is None
    # A daemon token is not a person: no people's routes.
    assert owner_daemon_token.get("/api/projects").status_code == 403
    assert owner_daemon_token.post("/api/agents", json={"name": "x", "provider": "command",
                                                        "command": ["true"]}).status_code == 403


def test_finding_04_member_removal_revokes_every_token(api):
    bob_id, bob = _add(api, "bob")
    did, r = _register(bob)
    bob_daemon = api.as_(r.json()["token"])
    bob.post("/api/agents", json={"name": "bobs", "provider": "command", "command": ["true"]})
    issue = api.post("/api/issues", json={"title": "t", "assignee": "bobs"}).json()
    claimed = bob_daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    assert len(claimed) == 1
    task_token = api.as_(claimed[0]["token"])
    task_id = claimed[0]["task"]["id"]
    assert bob_daemon.post(f"/api/daemon/tasks/{task_id}/status", json={"status": "running"}).status_code == 200
    personal = api.as_(bob.post("/api/tokens", json={"name": "laptop"}).json()["token"])

    assert api.delete(f"/api/workspaces/{_ws(api)}/members/{bob_id}").status_code == 204

    for token in (bob, personal, bob_daemon, task_token):
        assert token.get("/api/me").status_code == 401
    assert bob_daemon.post("/api/daemon/heartbeat", json={"task_ids": [task_id]}).status_code == 401
    assert bob_daemon.post("/api/daemon/claim", json={"limit": 1}).status_code == 401
    d = api.get(f"/api/daemons/{did}").json()
    assert d["online"] is False
    t = api.get(f"/api/tasks/{task_id}").json()
    assert t["status"] == "queued" and t["daemon_id"] is None
    assert api.get(f"/api/issues/{issue['number']}").status_code == 200


def test_finding_05_roles(api):
    ws = _ws(api)
    owner_id = api.get("/api/me").json()["user"]["id"]
    admin_id, admin = _add(api, "ada", role="admin")
    member_id, member = _add(api, "max")
    # An admin cannot remove or demote an owner, nor make one.
    assert admin.delete(f"/api/workspaces/{ws}/members/{owner_id}").status_code == 403
    assert admin.patch(f"/api/workspaces/{ws}/members/{owner_id}", json={"role": "member"}).status_code == 403
    assert admin.patch(f"/api/workspaces/{ws}/members/{member_id}", json={"role": "owner"}).status_code == 403
    assert admin.patch(f"/api/workspaces/{ws}/members/{member_id}", json={"role": "admin"}).status_code == 200
    assert admin.patch(f"/api/workspaces/{ws}/members/{member_id}", json={"role": "member"}).status_code == 200
    # The last owner can be neither removed nor demoted, even by themself.
    assert api.delete(f"/api/workspaces/{ws}/members/{owner_id}").status_code == 409
    assert api.patch(f"/api/workspaces/{ws}/members/{owner_id}", json={"role": "admin"}).status_code == 409
    # With a second owner, an owner may step down.
    assert api.patch(f"/api/workspaces/{ws}/members/{admin_id}", json={"role": "owner"}).status_code == 200
    assert admin.patch(f"/api/workspaces/{ws}/members/{owner_id}", json={"role": "admin"}).status_code == 200
    assert admin.patch(f"/api/workspaces/{ws}/members/{owner_id}", json={"role": "owner"}).status_code == 200
    # A plain member cannot rename the workspace, change its repos or delete projects.
    p = api.post("/api/projects", json={"title": "P"}).json()
    assert member.patch(f"/api/workspaces/{ws}", json={"name": "pwned"}).status_code == 403
    assert member.patch(f"/api/workspaces/{ws}", json={"repos": ["https://evil.example/x.git"]}).status_code == 403
    assert member.delete(f"/api/projects/{p['id']}").status_code == 403
    assert api.get(f"/api/workspaces/{ws}").json()["name"] == "Default"
    assert member.get(f"/api/projects/{p['id']}").status_code == 200
    assert admin.delete(f"/api/projects/{p['id']}").status_code == 204


def test_finding_06_daemon_requests_stay_on_the_target_daemons_stream():
    async def scenario() -> None:
        hub = Hub()
        hub.bind(asyncio.get_running_loop())
        browser = hub.subscribe("ws")
        target = hub.subscribe("ws", "daemon-a")
        bystander = hub.subscribe("ws", "daemon-b")
        asking = asyncio.create_task(hub.ask_daemon("ws", "daemon-a", {"op": "check_path", "path": "/home/a/x"}))
        event = await asyncio.wait_for(target.queue.get(), 5)
        assert event["type"] == "request" and event["path"] == "/home/a/x"
        assert browser.queue.empty() and bystander.queue.empty()
        assert hub.answer(event["request_id"], "daemon-b", {"ok": True}) is False  # spoofed
        assert hub.answer(event["request_id"], None, {"ok": True}) is False
        assert hub.answer(event["request_id"], "daemon-a", {"ok": False, "error": "no"}) is True
        assert await asking == {"ok": False, "error": "no"}
    asyncio.run(scenario())


def test_finding_06_answer_route_refuses_other_daemons(api):
    _, r = _register(api)
    d = api.as_(r.json()["token"])
    assert d.post(f"/api/daemon/requests/{uuid.uuid4()}", json={"ok": True}).json() == {"accepted": False}
    assert api.post(f"/api/daemon/requests/{uuid.uuid4()}", json={"ok": True}).status_code == 403


def test_finding_02_machine_consent(api):
    owner_daemon, r = _register(api)
    owner_d = api.as_(r.json()["token"])
    _, mallory = _add(api, "mallory")
    # A member cannot bind an agent to the owner's machine …
    r = mallory.post("/api/agents", json={"name": "evil", "provider": "command", "command": ["sh", "-c", "id"],
                                          "runtime": owner_daemon})
    assert r.status_code == 403 and "another member's machine" in r.json()["detail"]
    # … and an agent of theirs left unbound never runs there either.
    assert mallory.post("/api/agents", json={"name": "evil", "provider": "command",
                                             "command": ["sh", "-c", "id"]}).status_code == 201
    api.post("/api/issues", json={"title": "bait", "assignee": "evil"})
    assert owner_d.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"] == []
    # The owner's own agent: nobody else edits what it runs, anyone may give it work.
    assert api.post("/api/agents", json={"name": "mine", "provider": "command", "command": ["true"]}).status_code == 201
    for change in ({"command": ["sh", "-c", "cat ~/.ssh/id_rsa"]}, {"instructions": "leak"}, {"model": "x"},
                   {"runtime": None}, {"provider": "claude"}, {"network": "open"}, {"sandbox": False},
                   {"allow_hosts": ["attacker.example"]}):
        assert mallory.patch("/api/agents/mine", json=change).status_code == 403
    assert api.patch("/api/agents/mine", json={"command": ["echo", "hi"], "instructions": "be brief"}).json()["command"] == ["echo", "hi"]
    assert mallory.post("/api/issues", json={"title": "work", "assignee": "mine"}).status_code == 201
    claimed = owner_d.post("/api/daemon/claim", json={"limit": 5}).json()["tasks"]
    assert [c["agent"]["name"] for c in claimed] == ["mine"]
    assert claimed[0]["agent"]["command"] == ["echo", "hi"]


def test_finding_14_another_workspaces_task_is_404_for_a_daemon(api):
    _, r = _register(api)
    mine = api.as_(r.json()["token"])
    api.post("/api/agents", json={"name": "a", "provider": "command", "command": ["true"]})
    api.post("/api/issues", json={"title": "t", "assignee": "a"})
    task_id = mine.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    _, stranger = _add(api, "s")
    ws2 = stranger.post("/api/workspaces", json={"name": "Elsewhere"}).json()["id"]
    did = str(uuid.uuid4())
    r = stranger.post("/api/daemon/register", headers={"X-Workspace": ws2},
                      json={"daemon_id": did, "name": "x", "runtimes": [{"provider": "command"}]})
    theirs = api.as_(r.json()["token"])
    for path, body in ((f"/api/daemon/tasks/{task_id}/status", {"status": "running"}),
                       (f"/api/daemon/tasks/{task_id}/finish", {"status": "completed"}),
                       (f"/api/daemon/tasks/{task_id}/release", {})):
        answer = theirs.post(path, json=body)
        assert answer.status_code == 404, (path, answer.text)
    assert theirs.get(f"/api/tasks/{task_id}").status_code == 404
    assert theirs.post(f"/api/tasks/{task_id}/messages", json={"messages": []}).status_code == 404


def test_finding_14_local_directory_names_a_daemon_of_this_workspace(api):
    def add(project_id: str, daemon_id: str, path: str = "/srv/app", who=None):
        return (who or api).post(f"/api/projects/{project_id}/resources", json={
            "resource_type": "local_directory", "resource_ref": {"local_path": path, "daemon_id": daemon_id}})
    p = api.post("/api/projects", json={"title": "P"}).json()["id"]
    unknown_id = str(uuid.uuid4())
    unknown = add(p, unknown_id)
    assert unknown.status_code == 422
    assert "not registered in this workspace" in unknown.json()["detail"]
    assert "predictorx daemon start" in unknown.json()["detail"]  # how to register it first
    # Another workspace's daemon, even with /etc: the very same answer (no hint that it exists).
    _, stranger = _add(api, "s")
    ws2 = stranger.post("/api/workspaces", json={"name": "Elsewhere"}).json()["id"]
    theirs = str(uuid.uuid4())
    assert stranger.post("/api/daemon/register", headers={"X-Workspace": ws2}, json={
        "daemon_id": theirs, "name": "x", "runtimes": [{"provider": "command"}]}).status_code == 200
    foreign = add(p, theirs, "/etc")
    assert foreign.status_code == 422
    assert foreign.json()["detail"] == unknown.json()["detail"].replace(unknown_id, theirs)
    # With the project created in one go, nothing is written either.
    whole = api.post("/api/projects", json={"title": "Q", "resources": [{"resource_type": "local_directory",
                     "resource_ref": {"local_path": "/srv/q", "daemon_id": theirs}}]})
    assert whole.status_code == 422 and [x["title"] for x in api.get("/api/projects").json()] == ["P"]
    # A member's daemon: only its owner points it at folders on that machine.
    mine, _ = _register(api)
    _, member = _add(api, "m")
    refused = add(p, mine, who=member)
    assert refused.status_code == 403 and "another member" in refused.json()["detail"]
    assert add(p, mine).status_code == 201
