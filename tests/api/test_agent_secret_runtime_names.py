"""Machine consent holds against workspace secrets (issue 28 §2; envnames.py, service/agentenv.py):
an admin who is not an agent's owner cannot change what that agent runs on its owner's machine by
granting it a workspace secret named like a runtime setting (NODE_OPTIONS, ANTHROPIC_BASE_URL,
ANTHROPIC_MODEL, a proxy …). No such secret is made, none is granted, and one granted before this
check is left out of the claim. A model's API key is still granted; the agent's owner still sets a
runtime setting as the agent's own variable."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from predictorx.service import agentenv
from predictorx.store.schema import Agent, EnvGrant

KEY = "sk-ant-" + uuid.uuid4().hex
EVIL = "--require=/tmp/evil-" + uuid.uuid4().hex + ".js"


def _people(api):
    ws = api.get("/api/workspaces").json()[0]["id"]
    out = {}
    for name, role in (("ada", "admin"), ("mo", "member")):
        r = api.post(f"/api/workspaces/{ws}/members", json={"name": name, "role": role})
        assert r.status_code == 201, r.text
        out[name] = api.as_(r.json()["token"])
    return ws, out["ada"], out["mo"]


def _members_agent(member):
    did = str(uuid.uuid4())
    r = member.post("/api/daemon/register", json={"daemon_id": did, "name": f"host-{did[:4]}",
                                                  "runtimes": [{"provider": "command", "version": "1"}]})
    assert r.status_code == 200, r.text
    daemon = member.as_(r.json()["token"])
    r = member.post("/api/agents", json={"name": "mybot", "provider": "command", "command": ["true"], "runtime": did})
    assert r.status_code == 201, r.text
    return r.json(), daemon


def _claim_env(member, daemon) -> dict[str, dict]:
    assert member.post("/api/issues", json={"title": "Do it", "assignee": "mybot"}).status_code == 201
    [claimed] = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    return {v["name"]: v for v in claimed.get("env") or ()}


@pytest.mark.parametrize("name", ["NODE_OPTIONS", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "https_proxy",
                                  "GIT_SSH_COMMAND", "PYTHONSTARTUP", "OPENAI_BASE_URL", "CLAUDE_CONFIG_DIR"])
def test_an_admin_cannot_make_or_grant_a_workspace_secret_named_like_a_runtime_setting(api, name):
    _, ada, mo = _people(api)
    _members_agent(mo)
    r = ada.put(f"/api/secrets/{name}", json={"value": EVIL})
    assert r.status_code == 422, r.text
    said = r.json()["detail"]
    assert name in said and "only its owner" in said and EVIL not in said
    assert ada.get("/api/secrets").json() == []
    r = ada.post("/api/agents/mybot/grants", json={"name": name})
    assert r.status_code == 422 and "only its owner" in r.json()["detail"], r.text


def test_a_granted_api_key_still_reaches_the_members_agent_and_the_owner_sets_its_own_endpoint(api):
    _, ada, mo = _people(api)
    _, daemon = _members_agent(mo)
    assert ada.put("/api/secrets/ANTHROPIC_API_KEY", json={"value": KEY}).status_code == 200
    assert ada.post("/api/agents/mybot/grants", json={"name": "ANTHROPIC_API_KEY"}).status_code == 204
    # The owner's own choice of endpoint (machine consent is theirs); an admin still cannot set it.
    assert ada.put("/api/agents/mybot/env/ANTHROPIC_BASE_URL", json={"value": "https://x.example"}).status_code == 403
    r = mo.put("/api/agents/mybot/env/ANTHROPIC_BASE_URL", json={"value": "https://gw.example", "secret": False})
    assert r.status_code == 200, r.text
    env = _claim_env(mo, daemon)
    assert env["ANTHROPIC_API_KEY"] == {"name": "ANTHROPIC_API_KEY", "value": KEY, "secret": True,
                                        "scope": "workspace"}
    assert env["ANTHROPIC_BASE_URL"] == {"name": "ANTHROPIC_BASE_URL", "value": "https://gw.example",
                                         "secret": False, "scope": "agent"}


def test_a_runtime_setting_granted_before_the_check_is_left_out_of_the_claim(api, db):
    ws, ada, mo = _people(api)
    agent, daemon = _members_agent(mo)
    assert ada.put("/api/secrets/DB_PASSWORD", json={"value": "pg-" + KEY}).status_code == 200
    assert ada.post("/api/agents/mybot/grants", json={"name": "DB_PASSWORD"}).status_code == 204
    with db.write() as s:  # what the old code let an admin store and grant
        for name in ("NODE_OPTIONS", "ANTHROPIC_MODEL"):
            var, _ = agentenv._store(s, ws, agentenv.WORKSPACE, None, name, EVIL, True, None)
            s.add(EnvGrant(agent_id=agent["id"], env_var_id=var.id))
        agentenv._recount(s, [agent["id"]])
        assert s.scalar(select(Agent.env_count).where(Agent.id == agent["id"])) == 3
    assert ada.post("/api/agents/mybot/grants", json={"name": "NODE_OPTIONS"}).status_code == 422
    env = _claim_env(mo, daemon)
    assert set(env) == {"DB_PASSWORD"} and EVIL not in str(env)
    listed = {v["name"]: v for v in ada.get("/api/secrets").json()}
    assert not listed["NODE_OPTIONS"]["grantable"] and listed["DB_PASSWORD"]["grantable"]
    shown = {v["name"]: v for v in mo.get("/api/agents/mybot/env").json()}
    assert shown["NODE_OPTIONS"]["withheld"] and not shown["DB_PASSWORD"]["withheld"]
    assert ada.delete("/api/secrets/NODE_OPTIONS").status_code == 204  # an admin can still remove it
