"""Issue 29 finding 6 against a real server: with its task token an agent cannot resolve or scrap
the bean its workflow holds before the workflow's step — through the CLI inside its task and
through the MCP tool alike (each answers with the server's sentence) — while a person with the
role can, through the CLI, and the PROV record names them. Before the fix both answered OK."""

from __future__ import annotations

import json
import sys
import uuid

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from predictorx.daemon.workflowhooks import mcp_setup

P = "authoring-a-paper"


def _task(server):
    daemon = server.api("POST", "/api/daemon/register", {"daemon_id": str(uuid.uuid4()), "name": "h", "capabilities": [],
                                                        "runtimes": [{"provider": "command", "version": "1"}]})
    server.api("POST", "/api/agents", {"name": "bot", "provider": "command", "command": ["true"]})
    issue = server.api("POST", "/api/issues", {"title": "Write the introduction section of the paper", "assignee": "bot"})
    claim = server.http.post("/api/daemon/claim", json={"limit": 1},
                             headers={"Authorization": f"Bearer {daemon['token']}"}).json()["tasks"][0]
    env = {"PREDICTORX_SERVER_URL": server.url, "PREDICTORX_TOKEN": claim["token"],
           "PREDICTORX_ISSUE": str(issue["number"]), "PREDICTORX_TASK_ID": claim["task"]["id"]}
    return issue["number"], env


def _mcp_tries(tmp_path, env: dict[str, str]) -> dict:
    mcp_setup("claude", tmp_path, env)
    params = StdioServerParameters(command=sys.executable, args=["-m", "predictorx", "mcp", "--env-file",
                                                                 str(tmp_path / "predictorx-mcp.env.json")],
                                   env={"PATH": "/usr/bin:/bin", "PREDICTORX_HOME": str(tmp_path / "mcp-home")})

    async def run() -> dict:
        out = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for op in ("resolve", "scrap"):
                r = await session.call_tool("bean_update", {"bean": "Introduction", "op": op, "text": "done early"})
                out[op] = (r.is_error, r.content[0].text)
        return out

    return anyio.run(run)


def test_the_task_token_cannot_settle_the_workflows_bean_through_cli_or_mcp(server, tmp_path):
    n, env = _task(server)
    agent_env = server.cli_env(PREDICTORX_HOME=str(tmp_path / "agent-home"), **env)  # as the daemon runs it
    server.cli("bean", "create", str(n), "Introduction", env=agent_env)
    server.cli("workflow", "complete", str(n), P, "claim", "--produced", "bean=Introduction", env=agent_env)

    for args in (("resolve",), ("scrap", "--reason", "done early")):
        p = server.cli("bean", args[0], str(n), "Introduction", *args[1:], env=agent_env, check=False)
        assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
        assert "belongs to workflow 'authoring-a-paper' (now at plan)" in p.stderr
    out = _mcp_tries(tmp_path, env)
    assert out["resolve"][0] and "its step 'resolve' (role agent) does the resolve" in out["resolve"][1]
    assert out["scrap"][0] and "a person with role user may scrap it" in out["scrap"][1]
    bean = json.loads(server.cli("bean", "show", str(n), "Introduction", "-o", "json").stdout)
    assert bean["status"] == "in-progress"

    # the owner holds the process's user role: the CLI as a person settles it, and the record says so
    server.cli("bean", "resolve", str(n), "Introduction")
    bean = json.loads(server.cli("bean", "show", str(n), "Introduction", "-o", "json").stdout)
    assert bean["status"] == "resolved" and bean["notes"][-1]["by"].startswith("person owner (role user")
    doc = json.loads(server.cli("prov", "show", str(n), P).stdout)
    # the person's resolve; the refused tries are activities too, marked invalid (issue 24 §5)
    [act] = [g for g in doc["@graph"] if g.get("px:beanOp") == "resolve" and g.get("px:valid") is not False]
    assert len([g for g in doc["@graph"] if g.get("px:beanOp") == "resolve" and g.get("px:valid") is False]) >= 1
    assert act["prov:qualifiedAssociation"]["prov:hadRole"]["@id"] == "urn:predictorx:role:user"
    rep = json.loads(server.cli("prov", "qaqc", "--issue", str(n), "--json").stdout)
    assert rep["counts"]["refused"] == 2 and rep["counts"]["override"] == 1  # the CLI's and the MCP's refusals
