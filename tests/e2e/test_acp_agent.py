"""An ACP agent through the server and a daemon, sandboxed (the default): the SDK peer of
tests/agents/acp_peer.py as the workspace's own ACP agent (`--acp-command`), its permission
policy from the agent (`--permissions deny`), the run's MCP servers (agents-room, predictorx mcp)
handed to it in session/new, and its messages and result stored."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from .harness import Server, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")
PEER = [sys.executable, str(Path(__file__).resolve().parents[1] / "agents" / "acp_peer.py")]


@pytest.fixture
def server(tmp_path, database_url):
    """Nothing here tests the sweep: 30 s of liveness, not the harness's 3 s, so a daemon slowed by
    a loaded machine (load 22 seen) is not swept as lost mid-run."""
    s = Server(tmp_path / "server-home", database_url, PREDICTORX_DAEMON_TIMEOUT="30")
    yield s
    s.stop()


def test_a_workspace_acp_agent_runs_with_its_policy_and_mcp_servers(server, start_daemon):
    start_daemon()
    made = server.cli("agent", "create", "--name", "peer", "--provider", "acp", "--acp-command", shlex.join(PEER),
                      "--permissions", "deny")
    assert made.returncode == 0, made.stderr
    agent = server.api("GET", "/api/agents/peer")
    assert agent["provider"] == "acp" and agent["permissions"] == "deny" and agent["sandbox"] is True

    issue = server.api("POST", "/api/issues", {"title": "PEER_MCP please", "assignee": "peer"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task.get("failure_reason")
    msgs = server.api("GET", f"/api/tasks/{task['id']}/messages")
    said = "".join(m["content"].get("text", "") for m in msgs if m["kind"] == "text")
    assert sorted(said.split("mcp=")[1].split()[0].split(",")) == ["agents-room", "predictorx"], said
    permission = next(m["content"] for m in msgs if m["content"].get("event") == "permission")
    assert permission["policy"] == "deny" and permission["choice"] == "no"
    failed = next(m["content"] for m in msgs if m["kind"] == "tool_result")
    assert failed["is_error"] is True
    assert task["session_id"] == "peer-1" and task["result"] == " Done."

    server.cli("agent", "update", "peer", "--permissions", "allow")
    issue = server.api("POST", "/api/issues", {"title": "Again", "assignee": "peer"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    msgs = server.api("GET", f"/api/tasks/{task['id']}/messages")
    assert next(m["content"] for m in msgs if m["content"].get("event") == "permission")["choice"] == "yes"
    bad = server.cli("agent", "update", "peer", "--permissions", "maybe", check=False)
    assert bad.returncode != 0 and "permissions" in bad.stderr and "Traceback" not in bad.stderr


def test_ask_a_person_answers_with_the_cli(server, start_daemon):
    # The daemon looks at the task only when the server tells it the question was answered
    # (issue 30: no per-run timer): with its safety look an hour away, the answer still arrives.
    start_daemon(PREDICTORX_ASK_POLL_S="3600")
    server.cli("agent", "create", "--name", "asker", "--provider", "acp", "--acp-command", shlex.join(PEER),
               "--permissions", "ask")
    issue = server.api("POST", "/api/issues", {"title": "Ask me", "assignee": "asker"})
    run = wait_until(lambda: server.runs(issue["number"]), what="a task")[0]

    def question():
        msgs = server.api("GET", f"/api/tasks/{run['id']}/messages")
        return next((m["content"] for m in msgs if m["content"].get("event") == "permission"), None)

    asked = wait_until(question, 60, what="the agent's question in the task's messages")
    assert asked["waiting"] is True and [o["optionId"] for o in asked["options"]] == ["yes", "always", "no"]
    wrong = server.cli("task", "answer", run["id"], "perhaps", check=False)
    assert wrong.returncode != 0 and "is not one of the options: yes, always, no" in wrong.stderr
    assert "Traceback" not in wrong.stderr
    done = server.cli("task", "answer", run["id"], "always")
    assert "Answered always" in done.stdout
    task = server.wait_task(run["id"])
    assert task["status"] == "completed", task.get("failure_reason")
    msgs = server.api("GET", f"/api/tasks/{run['id']}/messages")
    answer = next(m["content"] for m in msgs if m["content"].get("event") == "permission_answer")
    assert answer["choice"] == "always" and answer["request_id"] == asked["request_id"]
    assert next(m["content"] for m in msgs if m["kind"] == "tool_result")["is_error"] is False
    late = server.cli("task", "answer", run["id"], "yes", check=False)
    assert late.returncode != 0 and "already completed" in late.stderr


def test_an_acp_agents_own_mcp_server_gets_its_secret_and_the_message_masks_it(server, start_daemon):
    """Issue 28 §3: the agent's stdio MCP server names one of its secrets (`--env-var`); the ACP
    agent gets the value in session/new (never on a command line or in a file), and when it prints
    it the task's messages show the mask."""
    import hashlib
    import uuid

    from predictorx.secretmask import MASK

    secret = "sk-acp-" + uuid.uuid4().hex
    start_daemon()
    assert server.cli("agent", "create", "--name", "peer", "--provider", "acp", "--acp-command",
                      shlex.join(PEER)).returncode == 0
    server.api("PUT", "/api/agents/peer/env/DB_PASSWORD", {"value": secret})
    added = server.cli("agent", "mcp", "add", "peer", "db", "--command", "db-mcp", "--env", "MODE=ro",
                       "--env-var", "DB_PASSWORD")
    assert added.returncode == 0, added.stderr
    issue = server.api("POST", "/api/issues", {"title": "PEER_MCP PEER_MCP_ENV please", "assignee": "peer"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task.get("failure_reason")
    said = "".join(m["content"].get("text", "") for m in server.api("GET", f"/api/tasks/{task['id']}/messages")
                   if m["kind"] == "text")
    assert sorted(said.split("mcp=")[1].split()[0].split(",")) == ["agents-room", "db", "predictorx"], said
    assert f"db:DB_PASSWORD={hashlib.sha256(secret.encode()).hexdigest()}" in said
    assert f"db:MODE={hashlib.sha256(b'ro').hexdigest()}" in said
    assert secret not in said and MASK in said.split("raw=")[1]


def test_an_unanswered_question_is_denied_after_the_agents_own_timeout(server, start_daemon):
    """The daemon's default wait is ten minutes; this agent's is ten seconds (issue 25 §2): its
    question is answered deny by then, recorded, and the run goes on."""
    start_daemon(PREDICTORX_ASK_TIMEOUT_S="3600")
    made = server.cli("agent", "create", "--name", "hasty", "--provider", "acp", "--acp-command", shlex.join(PEER),
                      "--permissions", "ask", "--ask-timeout", "10")
    assert made.returncode == 0, made.stderr
    assert server.api("GET", "/api/agents/hasty")["ask_timeout_s"] == 10
    issue = server.api("POST", "/api/issues", {"title": "Ask me", "assignee": "hasty"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"], timeout=180)
    assert task["status"] == "completed", task.get("failure_reason")
    msgs = server.api("GET", f"/api/tasks/{task['id']}/messages")
    timed_out = next(m["content"] for m in msgs if m["content"].get("event") == "permission_timeout")
    assert timed_out["choice"] == "no" and "within 10 s" in timed_out["message"]
    assert next(m["content"] for m in msgs if m["kind"] == "tool_result")["is_error"] is True
    too_short = server.cli("agent", "update", "hasty", "--ask-timeout", "3", check=False)
    assert too_short.returncode != 0 and "10 to 86400" in too_short.stderr and "Traceback" not in too_short.stderr
    assert server.cli("agent", "update", "hasty", "--ask-timeout", "0").returncode == 0
    assert server.api("GET", "/api/agents/hasty")["ask_timeout_s"] is None
