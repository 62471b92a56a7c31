"""`predictorx mcp` through the official MCP SDK's client, against a real server, as the daemon
wires it into a Claude Code or Codex run: the task token from a 0600 env file, tools that see the
sweep, take steps (refusals come back as the server's sentence), manage beans, write the handoff."""

from __future__ import annotations

import json
import sys
import uuid

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from predictorx.daemon.workflowhooks import mcp_setup


def test_mcp_tools_act_as_the_task(server, tmp_path):
    did = str(uuid.uuid4())
    daemon = server.api("POST", "/api/daemon/register", {"daemon_id": did, "name": "h", "capabilities": [],
                                                        "runtimes": [{"provider": "command", "version": "1"}]})
    server.api("POST", "/api/agents", {"name": "bot", "provider": "command", "command": ["true"]})
    issue = server.api("POST", "/api/issues", {"title": "Add a CSV export command to the CLI", "assignee": "bot"})
    claim = server.http.post("/api/daemon/claim", json={"limit": 1},
                             headers={"Authorization": f"Bearer {daemon['token']}"}).json()["tasks"][0]
    env = {"PREDICTORX_SERVER_URL": server.url, "PREDICTORX_TOKEN": claim["token"],
           "PREDICTORX_ISSUE": str(issue["number"]), "PREDICTORX_TASK_ID": claim["task"]["id"]}
    args = mcp_setup("codex", tmp_path, env)
    assert claim["token"] not in " ".join(args)  # never in argv
    env_file = tmp_path / "predictorx-mcp.env.json"
    assert env_file.stat().st_mode & 0o777 == 0o600
    params = StdioServerParameters(command=sys.executable, args=["-m", "predictorx", "mcp", "--env-file", str(env_file)],
                                   env={"PATH": "/usr/bin:/bin", "PREDICTORX_HOME": str(tmp_path / "home")})

    async def session_run() -> dict:
        out = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            state = await session.call_tool("harness_state", {})
            out["state"] = json.loads(state.content[0].text)
            done = await session.call_tool("workflow_complete", {"process": "feature-request", "step": "capture"})
            out["done"] = done.is_error
            refused = await session.call_tool("workflow_complete", {"process": "feature-request", "step": "signoff"})
            out["refused"] = (refused.is_error, refused.content[0].text)
            for _ in range(2):
                await session.call_tool("bean_create", {"title": "CSV writer"})
            listed = await session.call_tool("bean_list", {})
            out["beans"] = " ".join(c.text for c in listed.content)
            h = await session.call_tool("handoff_write", {"done": "captured", "next_step": "draft requirements"})
            out["handoff"] = json.loads(h.content[0].text)
        return out

    out = anyio.run(session_run)
    assert {"harness_state", "workflow_complete", "workflow_pass_gate", "workflow_suspend", "workflow_resume",
            "bean_create", "handoff_write", "classify"} <= set(out["tools"])
    assert [e["node"] for e in out["state"]["instances"][0]["enabled"]] == ["capture"]
    assert out["done"] is False
    assert out["refused"][0] and "step 'signoff' is not enabled now; enabled: step 'requirements'" in out["refused"][1]
    assert out["beans"].count('"CSV writer"') == 1  # created twice, one bean
    assert out["handoff"]["next_step"] == "draft requirements" and "feature-request running at requirements" \
        in out["handoff"]["position_text"]
