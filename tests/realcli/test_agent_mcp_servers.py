"""An agent's own MCP server with a secret in its header, through the real Claude Code (issue 28
§3): the daemon writes `Authorization: Bearer ${DOCS_TOKEN}` into Claude's --mcp-config and puts
the secret in the agent's environment only; Claude expands it when it connects, so the MCP server
(the official SDK's, over streamable HTTP on loopback, refusing any other header) is reached with
the value, and the model is offered its tool — while the value is in no process's command line and
in no file the daemon wrote."""

from __future__ import annotations

import os
import uuid

from .mcp_http import TOOL, RecordingMcp


def _command_lines_with(marker: str) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def test_claude_expands_a_secret_into_its_mcp_servers_header(scenario):
    secret = "sk-docs-" + uuid.uuid4().hex
    mcp = RecordingMcp(secret)
    mcp.start()
    try:
        s = scenario("claude")
        s.server.api("PUT", f"/api/agents/{s.agent_name}/env/DOCS_TOKEN", {"value": secret, "secret": True})
        s.server.api("PATCH", f"/api/agents/{s.agent_name}",
                     {"mcp_servers": [{"name": "docs", "url": mcp.url, "bearer_env": "DOCS_TOKEN"}]})
        project = s.project(s.person_repo(), "worktree")
        _, run = s.assign(project)
        seen_in_argv = []

        def offered(requests):
            seen_in_argv.extend(_command_lines_with(secret))  # while the run goes: no command line holds it
            return any(f"mcp__docs__{TOOL}" in r.text for r in requests)

        s.model.wait_for(offered, timeout=120)
        task = s.wait(run["id"])
        assert task["status"] == "completed", task.get("failure_reason")
        assert f"Bearer {secret}" in mcp.authorizations  # expanded by Claude from its environment
        assert all(a == f"Bearer {secret}" for a in mcp.authorizations)  # never the literal ${DOCS_TOKEN}
        assert seen_in_argv == []
        written = [p for p in (s.root / "daemon").rglob("*") if p.is_file()]
        assert not [p for p in written if secret.encode() in p.read_bytes()]
        assert secret not in str(s.server.api("GET", f"/api/tasks/{run['id']}/messages"))
    finally:
        mcp.stop()
