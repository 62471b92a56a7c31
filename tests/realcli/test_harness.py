"""The harness driven by a real CLI (issue 12, R-HAR-7): the real Claude Code, run by the daemon,
completes its workflow step by calling the `predictorx` MCP server's tool (the daemon adds
`predictorx mcp` to the run with the task's token), and the platform records the step as the
agent's. tests/e2e/test_harness_flow.py drives the same workflow with the `command` stand-in."""

from __future__ import annotations

import json

TOOL = "mcp__predictorx__workflow_complete"


def test_real_claude_completes_its_workflow_step_through_predictorx_mcp(scenario):
    s = scenario("claude")
    s.model.call = (TOOL, {"process": "feature-request", "step": "capture",
                           "note": "restated: a `predictorx export --csv` command"})
    s.model.answer = "Captured the need; the requirements are next."
    project = s.server.api("POST", "/api/projects", {"title": "Exports"})
    issue = s.server.api("POST", "/api/issues", {"title": "Add a CSV export command to the CLI",
                                                 "project_id": project["id"], "assignee": s.agent_name})
    n = issue["number"]
    # Classified at creation: the workflow is running at `capture` before the agent starts.
    [wf] = s.server.api("GET", f"/api/issues/{n}/workflows")
    assert wf["process_id"] == "feature-request" and [e["node"] for e in wf["enabled"]] == ["capture"]

    task = s.wait(s.server.runs(n)[-1]["id"])
    # The real CLI offered the harness's tools — deferred, by name, as Claude Code 2.1 offers MCP
    # tools — and the sweep was in the prompt; the model loaded the tool's schema with ToolSearch.
    asked = [r for r in s.model.requests if r.turn in ("search", "tool", "answer")]
    assert [r.turn for r in asked] == ["search", "tool", "answer"], [(r.turn, r.path) for r in s.model.requests]
    assert TOOL in asked[0].text and "mcp__predictorx__handoff_write" in asked[0].text
    # one MCP server for the run (issue 30): agents-room's tools come through `predictorx mcp` too
    assert "mcp__predictorx__msg_send" in asked[0].text and "mcp__agents-room__" not in asked[0].text
    assert "enabled step `capture`" in asked[0].text
    # The tool ran through `predictorx mcp` with the task's token: the server's answer came back.
    msgs = s.messages(task["id"])
    uses = [m for m in msgs if m["kind"] == "tool_use"]
    assert [u["content"]["name"] for u in uses] == ["ToolSearch", TOOL]
    result = [m for m in msgs if m["kind"] == "tool_result"][-1]
    assert not result["content"].get("is_error"), result
    assert "requirements" in json.dumps(result["content"])  # the server's answer: the next enabled step
    # The platform recorded the step, as the agent's, and moved on.
    shown = s.server.api("GET", f"/api/issues/{n}/workflows/feature-request")
    done = [h for h in shown["history"] if h["node_id"] == "capture"]
    assert done and done[-1]["status"] == "done", shown["history"]
    assert s.agent_name in json.dumps(done[-1]) and "restated" in json.dumps(done[-1]), done[-1]
    [wf] = s.server.api("GET", f"/api/issues/{n}/workflows")
    assert [e["node"] for e in wf["enabled"]] == ["requirements"]
