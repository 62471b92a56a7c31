"""Per-agent secrets and variables (issue 28 §2; service/agentenv.py): who may set and read them,
what the API ever answers (a secret's name and last four, never its value), that they are sealed
at rest (the SQLite file's bytes and every table row, PostgreSQL's too), and that only a claim by
the agent owner's own daemon carries them."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from sqlalchemy import MetaData, select

from predictorx.service import agentenv, secretbox
from predictorx.store.schema import Agent, EnvVar

SECRET = "sk-live-" + uuid.uuid4().hex  # long: listed as its last four
WS_SECRET = "pg-pass-" + uuid.uuid4().hex


def _ws(api) -> str:
    return api.get("/api/workspaces").json()[0]["id"]


def _add(api, name: str, role: str = "member"):
    r = api.post(f"/api/workspaces/{_ws(api)}/members", json={"name": name, "role": role})
    assert r.status_code == 201, r.text
    return r.json()["user_id"], api.as_(r.json()["token"])


def _daemon(person) -> tuple[str, object]:
    did = str(uuid.uuid4())
    r = person.post("/api/daemon/register", json={"daemon_id": did, "name": f"host-{did[:4]}",
                                                  "runtimes": [{"provider": "command", "version": "1"}]})
    assert r.status_code == 200, r.text
    return did, person.as_(r.json()["token"])


def _agent(person, name: str, did: str) -> dict:
    r = person.post("/api/agents", json={"name": name, "provider": "command", "command": ["true"], "runtime": did})
    assert r.status_code == 201, r.text
    return r.json()


def _set(person, agent: str, name: str, value: str, secret: bool = True):
    return person.put(f"/api/agents/{agent}/env/{name}", json={"value": value, "secret": secret})


def test_only_the_agent_owner_sets_and_only_owner_or_admin_reads_names(api):
    did, _ = _daemon(api)
    _agent(api, "keeper", did)
    _, bob = _add(api, "bob")            # a member who does not own the agent
    _, ada = _add(api, "ada", "admin")   # an admin who does not own it either
    r = _set(api, "keeper", "API_KEY", SECRET)
    assert r.status_code == 200, r.text
    assert r.json() == {**r.json(), "name": "API_KEY", "secret": True, "last4": SECRET[-4:]}
    assert SECRET not in r.text

    assert _set(bob, "keeper", "API_KEY", "bob-wants-in-0000").status_code == 403
    assert _set(bob, "keeper", "OTHER", "bob-wants-in-0000").status_code == 403
    assert bob.get("/api/agents/keeper/env").status_code == 403
    assert bob.delete("/api/agents/keeper/env/API_KEY").status_code == 403
    assert _set(ada, "keeper", "API_KEY", "ada-replaces-0000").status_code == 403  # an admin does not set it either

    listed = ada.get("/api/agents/keeper/env")
    assert listed.status_code == 200 and SECRET not in listed.text
    assert [(v["name"], v["last4"]) for v in listed.json()] == [("API_KEY", SECRET[-4:])]
    for path in ("/api/agents", "/api/agents/keeper", "/api/agents/keeper/env"):
        assert SECRET not in api.get(path).text
    assert api.get("/api/agents/keeper").json()["env_count"] == 1
    # Another workspace's person does not even find the agent.
    assert ada.delete("/api/agents/keeper/env/API_KEY").status_code == 204
    assert api.get("/api/agents/keeper").json()["env_count"] == 0


def test_names_values_and_short_secrets_are_checked(api):
    did, _ = _daemon(api)
    _agent(api, "keeper", did)
    for bad in ("PATH", "PREDICTORX_TOKEN", "LD_PRELOAD", "1ABC", "A-B", "BASH_ENV"):
        r = _set(api, "keeper", bad, "some-value-123")
        assert r.status_code == 422, (bad, r.text)
    short = _set(api, "keeper", "PIN", "123")
    assert short.status_code == 422 and "123" not in short.text
    plain = _set(api, "keeper", "COLOR", "blue", secret=False)
    assert plain.status_code == 200 and plain.json()["value"] == "blue"  # a plain variable is shown
    mid = _set(api, "keeper", "MID", "abcdefgh")  # a short secret does not show its last four
    assert mid.status_code == 200 and mid.json()["last4"] is None


def test_a_claim_carries_the_values_to_the_owners_daemon_only(api, db):
    did, daemon = _daemon(api)
    agent = _agent(api, "keeper", did)
    assert _set(api, "keeper", "API_KEY", SECRET).status_code == 200
    assert _set(api, "keeper", "COLOR", "blue", secret=False).status_code == 200
    bob_id, bob = _add(api, "bob")
    bob_did, bob_daemon = _daemon(bob)
    _agent(bob, "bobs", bob_did)

    assert api.post("/api/issues", json={"title": "Do it", "assignee": "keeper"}).status_code == 201
    assert bob_daemon.post("/api/daemon/claim", json={"limit": 4}).json()["tasks"] == []  # not bob's daemon's
    [claimed] = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    assert sorted((v["name"], v["value"], v["secret"]) for v in claimed["env"]) == [
        ("API_KEY", SECRET, True), ("COLOR", "blue", False)]
    assert "env" not in claimed["agent"] and SECRET not in str(claimed["agent"])
    # The answer's task and agent, read by people, carry nothing of it.
    task_id = claimed["task"]["id"]
    assert SECRET not in api.get(f"/api/tasks/{task_id}").text
    # A run of bob's agent (no variables) carries none, and nobody else's daemon gets keeper's.
    assert bob.post("/api/issues", json={"title": "Bob's", "assignee": "bobs"}).status_code == 201
    [bobs] = bob_daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    assert "env" not in bobs
    with db.read() as s:
        keeper = s.get(Agent, agent["id"])
        assert agentenv.for_claim(s, bob_did, keeper) is None
        assert agentenv.for_claim(s, did, keeper) is not None


def test_workspace_secrets_are_granted_by_admins_and_reach_only_granted_agents(api):
    did, daemon = _daemon(api)
    _agent(api, "keeper", did)
    _agent(api, "other", did)
    _, bob = _add(api, "bob")
    assert bob.put("/api/secrets/DB_PASSWORD", json={"value": WS_SECRET}).status_code == 403
    assert api.put("/api/secrets/DB_PASSWORD", json={"value": WS_SECRET}).status_code == 200
    assert bob.get("/api/secrets").status_code == 403
    assert bob.post("/api/agents/keeper/grants", json={"name": "DB_PASSWORD"}).status_code == 403
    assert api.post("/api/agents/keeper/grants", json={"name": "DB_PASSWORD"}).status_code == 204
    listed = api.get("/api/secrets")
    assert WS_SECRET not in listed.text and listed.json()[0]["agents"] == ["keeper"]
    assert [v["name"] for v in api.get("/api/agents/keeper/env").json() if v["granted"]] == ["DB_PASSWORD"]

    api.post("/api/issues", json={"title": "Granted", "assignee": "keeper"})
    api.post("/api/issues", json={"title": "Not granted", "assignee": "other"})
    claimed = {c["agent"]["name"]: c for c in daemon.post("/api/daemon/claim", json={"limit": 4}).json()["tasks"]}
    assert claimed["keeper"]["env"] == [{"name": "DB_PASSWORD", "value": WS_SECRET, "secret": True,
                                         "scope": "workspace"}]
    assert "env" not in claimed["other"]

    assert api.delete("/api/secrets/DB_PASSWORD").status_code == 204  # the grants go with it
    assert api.get("/api/agents/keeper").json()["env_count"] == 0


def test_values_are_sealed_at_rest_and_rotate_with_the_key(api, db, database_url):
    did, _ = _daemon(api)
    _agent(api, "keeper", did)
    assert _set(api, "keeper", "API_KEY", SECRET).status_code == 200
    assert api.put("/api/secrets/DB_PASSWORD", json={"value": WS_SECRET}).status_code == 200
    meta = MetaData()
    meta.reflect(db.engine)
    with db.engine.connect() as conn:
        dump = "\n".join(repr(tuple(r)) for t in meta.sorted_tables for r in conn.execute(select(t)))
        sealed = list(conn.execute(select(meta.tables["env_var"].c.value_sealed)).scalars())
    assert SECRET not in dump and WS_SECRET not in dump
    assert SECRET[-4:] in dump  # (what the list shows is kept as it is)
    assert all(v.startswith("pxs2:") for v in sealed) and len(sealed) == 2
    if database_url.startswith("sqlite:///"):
        path = Path(database_url.removeprefix("sqlite:///"))
        data = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file())
        assert data and SECRET.encode() not in data and WS_SECRET.encode() not in data
    # `server rotate-key` re-seals the new column with the rest (secretbox.sealed_columns).
    assert any(model is EnvVar and col == "value_sealed" for model, col in secretbox.sealed_columns())
    rotation = secretbox.rotate(db.write)
    assert rotation.resealed >= 2
    with db.read() as s:
        keeper = s.scalar(select(Agent).where(Agent.name == "keeper"))
        assert api.get("/api/agents/keeper/env").status_code == 200
        values = {v.name: secretbox.unseal_from(v, "value_sealed") for v in s.scalars(select(EnvVar))}
        assert values == {"API_KEY": SECRET, "DB_PASSWORD": WS_SECRET} and keeper is not None


def test_variables_that_cannot_be_opened_cancel_that_run_only(api, db):
    did, daemon = _daemon(api)
    _agent(api, "keeper", did)
    _agent(api, "plain", did)
    assert _set(api, "keeper", "API_KEY", SECRET).status_code == 200
    with db.write() as s:  # sealed with a key this server no longer has
        var = s.scalar(select(EnvVar).where(EnvVar.name == "API_KEY"))
        var.value_sealed = "pxs2:deadbeef:" + var.value_sealed.split(":", 2)[2]
    keeper = api.post("/api/issues", json={"title": "Needs the key", "assignee": "keeper"}).json()
    api.post("/api/issues", json={"title": "Needs nothing", "assignee": "plain"})
    claimed = daemon.post("/api/daemon/claim", json={"limit": 4})
    assert claimed.status_code == 200, claimed.text
    assert [c["agent"]["name"] for c in claimed.json()["tasks"]] == ["plain"]
    [run] = api.get(f"/api/issues/{keeper['number']}/runs").json()
    assert run["status"] == "cancelled" and "cannot be opened" in run["failure_reason"]
    assert "deadbeef" in run["failure_reason"] and SECRET not in run["failure_reason"]


def test_a_comment_the_agent_posts_with_its_task_token_masks_its_secrets(api):
    did, daemon = _daemon(api)
    _agent(api, "keeper", did)
    assert _set(api, "keeper", "API_KEY", SECRET).status_code == 200
    assert _set(api, "keeper", "COLOR", "blue", secret=False).status_code == 200
    issue = api.post("/api/issues", json={"title": "Say it", "assignee": "keeper"}).json()
    [claimed] = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    agent = api.as_(claimed["token"])
    r = agent.post(f"/api/issues/{issue['number']}/comments", json={"body": f"my key is {SECRET}, color blue"})
    assert r.status_code == 201, r.text
    comments = api.get(f"/api/issues/{issue['number']}/comments").text
    assert SECRET not in comments and "my key is ••••••, color blue" in comments
    # A person's comment is theirs: not rewritten.
    api.post(f"/api/issues/{issue['number']}/comments", json={"body": "not-a-secret sk-person"})
    assert "sk-person" in api.get(f"/api/issues/{issue['number']}/comments").text


ODD_SECRET = 'pa"ss\\wörd-' + uuid.uuid4().hex  # a quote, a backslash and a non-ASCII letter: JSON escapes them


def test_whatever_the_agent_writes_with_its_task_token_has_its_secrets_masked(api):
    """Not only comments (issue 28 §2): a handoff, a bean, a bean file imported, its issue's
    description — any writing route a task token may call — loses the agent's secrets before it is
    stored, whether the agent wrote the value plainly or JSON-escaped it (server/taskmasking.py)."""
    did, daemon = _daemon(api)
    _agent(api, "leaky", did)
    assert _set(api, "leaky", "API_KEY", SECRET).status_code == 200
    assert _set(api, "leaky", "DB_PASS", ODD_SECRET).status_code == 200
    issue = api.post("/api/issues", json={"title": "Leak it", "assignee": "leaky"}).json()
    [claimed] = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    task_id, agent = claimed["task"]["id"], api.as_(claimed["token"])
    n = issue["number"]
    said = f"key {SECRET} and pass {ODD_SECRET}"
    assert agent.post(f"/api/tasks/{task_id}/harness/handoff", json={"done": said, "next_step": said}).status_code == 200
    made = agent.post(f"/api/issues/{n}/beans", json={"title": "Rotate " + SECRET, "body": said})
    assert made.status_code in (200, 201), made.text
    assert agent.post(f"/api/issues/{n}/comments", json={"body": said}).status_code == 201
    stored = (api.get(f"/api/tasks/{task_id}/harness/handoff").text + api.get(f"/api/issues/{n}/beans").text
              + api.get(f"/api/issues/{n}/comments").text)
    for value in (SECRET, ODD_SECRET, json.dumps(ODD_SECRET)[1:-1], json.dumps(ODD_SECRET, ensure_ascii=False)[1:-1]):
        assert value not in stored
    assert stored.count("••••••") >= 6
    # A person writing the same text is not rewritten: it is theirs.
    api.post(f"/api/issues/{n}/comments", json={"body": f"person says {SECRET}"})
    assert SECRET in api.get(f"/api/issues/{n}/comments").text


def test_an_agent_without_secrets_and_a_bad_task_token_pass_through_unchanged(api):
    did, daemon = _daemon(api)
    _agent(api, "plain", did)
    issue = api.post("/api/issues", json={"title": "Nothing to hide", "assignee": "plain"}).json()
    [claimed] = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    agent = api.as_(claimed["token"])
    assert agent.post(f"/api/issues/{issue['number']}/comments", json={"body": "sk-not-a-secret"}).status_code == 201
    assert "sk-not-a-secret" in api.get(f"/api/issues/{issue['number']}/comments").text
    forged = api.as_("pxt_" + "x" * 40).post(f"/api/issues/{issue['number']}/comments", json={"body": "hi"})
    assert forged.status_code == 401 and "token" in forged.json()["detail"]
