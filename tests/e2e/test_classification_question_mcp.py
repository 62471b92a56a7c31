"""Issue 24 §3/§6 end to end: an issue the table is not sure of starts no workflow; the agent's
task sees the question (the sweep the daemon renders into its prompt, and `harness_state`) and
answers it through `predictorx mcp` (the official MCP SDK's client, the task token), which starts
the workflow its judgement selects."""

from __future__ import annotations

import json
import sys
import uuid

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from predictorx.daemon.workflowhooks import mcp_setup
from predictorx.workflowmcp.sweep_text import render


def test_the_agent_answers_a_pending_classification_through_mcp(server, tmp_path):
    did = str(uuid.uuid4())
    daemon = server.api("POST", "/api/daemon/register", {"daemon_id": did, "name": "h", "capabilities": [],
                                                        "runtimes": [{"provider": "command", "version": "1"}]})
    server.api("POST", "/api/agents", {"name": "bot", "provider": "command", "command": ["true"]})
    issue = server.api("POST", "/api/issues", {"title": "Edit the API docs page of the platform", "assignee": "bot"})
    assert server.api("GET", f"/api/issues/{issue['number']}/workflows") == []
    claim = server.http.post("/api/daemon/claim", json={"limit": 1},
                             headers={"Authorization": f"Bearer {daemon['token']}"}).json()["tasks"][0]
    sweep = server.http.get(f"/api/tasks/{claim['task']['id']}/harness/sweep",
                            headers={"Authorization": f"Bearer {claim['token']}"}).json()
    [pending] = sweep["pending_classifications"]
    assert pending["question"] in render(sweep)  # the prompt's section, as the daemon renders it
    env = {"PREDICTORX_SERVER_URL": server.url, "PREDICTORX_TOKEN": claim["token"],
           "PREDICTORX_ISSUE": str(issue["number"]), "PREDICTORX_TASK_ID": claim["task"]["id"]}
    mcp_setup("codex", tmp_path, env)
    params = StdioServerParameters(command=sys.executable, args=["-m", "predictorx", "mcp", "--env-file",
                                                                 str(tmp_path / "predictorx-mcp.env.json")],
                                   env={"PATH": "/usr/bin:/bin", "PREDICTORX_HOME": str(tmp_path / "home")})

    async def session_run() -> dict:
        out = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            state = await session.call_tool("harness_state", {})
            out["state"] = json.loads(state.content[0].text)
            listed = await session.call_tool("classification_pending", {})
            out["pending"] = [json.loads(c.text) for c in listed.content]
            no_reason = await session.call_tool("classification_judge", {"category": "content_authoring",
                                                                         "folio": "document", "reason": " "})
            out["no_reason"] = (no_reason.is_error, no_reason.content[0].text)
            judged = await session.call_tool("classification_judge", {
                "category": "content_authoring", "folio": "document", "classification": pending["id"],
                "reason": "the person answered: it is the docs folio, no platform change"})
            out["judged"] = json.loads(judged.content[0].text)
            after = await session.call_tool("classification_pending", {})
            out["after"] = [c.text for c in after.content]
        return out

    out = anyio.run(session_run)
    assert [p["id"] for p in out["state"]["pending_classifications"]] == [pending["id"]]
    assert out["pending"][0]["question"] == pending["question"]
    assert set(out["pending"][0]["candidates"]) == {"feature_request", "content_authoring"}
    assert out["no_reason"][0] and "needs a reason" in out["no_reason"][1]
    assert out["judged"]["method"] == "judgement" and out["judged"]["workflow"] == "authoring-a-document"
    assert out["judged"]["decided_by"].startswith("agent task ")
    assert out["after"] in ([], ["[]"])
    assert [i["process_id"] for i in server.api("GET", f"/api/issues/{issue['number']}/workflows")] == \
        ["authoring-a-document"]
