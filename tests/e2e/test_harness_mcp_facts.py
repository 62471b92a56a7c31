"""Facts and the session through the official MCP client (issue 24 items 1 and 3), as an agent in a
task meets them: the sweep lists what a gate reads and from where; a system fact passed to
workflow_pass_gate is refused with the server's sentence and the gate computes it instead (a bean
in progress is not done); a step of a suspended workflow is refused, saying how to resume it; the
commit boundary refuses a commit the agent's run did not deliver and takes the one it did."""

from __future__ import annotations

import hashlib
import json
import sys
import uuid

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from predictorx.daemon.workflowhooks import mcp_setup


def _auth(token):
    return {"Authorization": f"Bearer {token}"}


def test_mcp_gate_refuses_a_forged_system_fact_and_a_suspended_workflows_step(server, tmp_path):
    did = str(uuid.uuid4())
    daemon = server.api("POST", "/api/daemon/register", {"daemon_id": did, "name": "h", "capabilities": [],
                                                        "runtimes": [{"provider": "command", "version": "1"}]})
    server.api("POST", "/api/agents", {"name": "bot", "provider": "command", "command": ["true"]})
    issue = server.api("POST", "/api/issues", {"title": "Add a CSV export command to the CLI", "assignee": "bot"})
    n = issue["number"]
    claim = server.http.post("/api/daemon/claim", json={"limit": 1}, headers=_auth(daemon["token"])).json()["tasks"][0]
    tok = claim["token"]

    def step(token, name, **body):
        r = server.http.post(f"/api/issues/{n}/workflows/feature-request/steps", json={"step": name, **body},
                             headers=_auth(token))
        assert r.status_code == 200, r.text

    for name in ("capture", "requirements"):
        step(tok, name)
    step(server.token, "signoff")
    step(server.token, "approved", outcome="approved", reason="scope agreed")
    step(tok, "plan-beans")
    server.http.post(f"/api/issues/{n}/beans", json={"title": "CSV writer"}, headers=_auth(tok))
    # implement is a commit boundary: the run commits and ends, its daemon reports the commit it delivered,
    # and the next task (dispatched by that delivery) takes the step through the agent's MCP tool
    ours, persons = hashlib.sha1(b"run").hexdigest(), hashlib.sha1(b"person").hexdigest()
    review = {"branch": f"feat/{n}-csv", "base": "0" * 40, "tip": ours, "commits": [ours], "files": [], "patch": ""}
    r = server.http.post(f"/api/daemon/tasks/{claim['task']['id']}/finish", headers=_auth(daemon["token"]),
                         json={"status": "completed", "review": review})
    assert r.status_code == 200, r.text
    claim = server.http.post("/api/daemon/claim", json={"limit": 1}, headers=_auth(daemon["token"])).json()["tasks"][0]
    tok = claim["token"]
    work = {"bean": "CSV writer", "branch": f"feat/{n}-csv"}

    env = {"PREDICTORX_SERVER_URL": server.url, "PREDICTORX_TOKEN": tok, "PREDICTORX_ISSUE": str(n),
           "PREDICTORX_TASK_ID": claim["task"]["id"]}
    mcp_setup("claude", tmp_path, env)
    params = StdioServerParameters(command=sys.executable, args=["-m", "predictorx", "mcp", "--env-file",
                                                                 str(tmp_path / "predictorx-mcp.env.json")],
                                   env={"PATH": "/usr/bin:/bin", "PREDICTORX_HOME": str(tmp_path / "home")})

    async def session_run() -> dict:
        out = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            pushed = await session.call_tool("workflow_complete", {"process": "feature-request", "step": "implement",
                                                                   "produced": {**work, "commit": persons}})
            out["pushed"] = (pushed.is_error, pushed.content[0].text)
            own = await session.call_tool("workflow_complete", {"process": "feature-request", "step": "implement",
                                                                "produced": {**work, "commit": ours}})
            out["own"] = (own.is_error, json.loads(own.content[0].text)["step"]["produced"]["commit"])
            sweep = json.loads((await session.call_tool("harness_state", {})).content[0].text)
            out["reads"] = sweep["instances"][0]["enabled"][0]["facts"]
            forged = await session.call_tool("workflow_pass_gate", {"process": "feature-request", "gate": "more",
                                                                    "facts": {"open_beans": 0}})
            out["forged"] = (forged.is_error, forged.content[0].text)
            passed = await session.call_tool("workflow_pass_gate", {"process": "feature-request", "gate": "more"})
            out["passed"] = json.loads(passed.content[0].text)["step"]
            await session.call_tool("workflow_start", {"process": "bug-triage"})
            await session.call_tool("workflow_suspend", {})
            await session.call_tool("workflow_resume", {})  # bug-triage active again, feature-request suspended
            await session.call_tool("workflow_suspend", {})  # bug-triage suspended too: idle
            other = await session.call_tool("workflow_complete", {"process": "bug-triage", "step": "reproduce"})
            out["suspended"] = (other.is_error, other.content[0].text)
        return out

    out = anyio.run(session_run)
    assert out["pushed"][0] and f"commit {persons} on feat/{n}-csv is not one an agent's run delivered" in out["pushed"][1]
    assert out["own"] == (False, ours)
    assert out["reads"] == {"system": ["beans_created", "beans_in_progress"], "asserted": []}
    assert out["forged"][0] and "open_beans is a system fact Predictor X computes at the pass" in out["forged"][1]
    assert (out["passed"]["outcome"], out["passed"]["facts"]) == (
        "beans to accept", {"beans_created": 0, "beans_in_progress": 1})  # the bean in progress is not done
    assert out["suspended"][0] and "is suspended; resume it first" in out["suspended"][1]
