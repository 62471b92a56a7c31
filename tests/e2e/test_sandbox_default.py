"""The sandbox is the default (issue 29): a new agent is sandboxed; turning it off, for an agent or
a daemon, says what the agent can then reach (finding 11); a daemon says at start which mode it
runs in, and where bubblewrap is missing how to install it — then a sandboxed agent's run fails
saying so, unless the daemon was started with --no-sandbox."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from .harness import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")
REACH = "the daemon's own state dir (config.json with its token)"
#: Says whether pid 1 of its world is bwrap (sandboxed) or not, and whether it was told so.
WHERE = ["sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline; echo; echo IS_SANDBOX=${IS_SANDBOX:-unset}"]


def _run(server, name: str) -> dict:
    issue = server.api("POST", "/api/issues", {"title": f"Run {name}", "assignee": name})
    return server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])


def _text(server, task: dict) -> str:
    return json.dumps(server.api("GET", f"/api/tasks/{task['id']}/messages"))


def test_a_new_agent_is_sandboxed_and_turning_it_off_says_what_it_reaches(server, start_daemon):
    daemon = start_daemon(IS_SANDBOX="")  # whatever this machine says: the daemon sets it for sandboxed runs
    wait_until(lambda: "sandbox: on (bubblewrap)" in daemon.output(), what="the daemon to say its mode")
    made = server.cli("agent", "create", "--name", "boxed", "--provider", "command", "--command", shlex.join(WHERE))
    assert made.stderr == "" and server.api("GET", "/api/agents/boxed")["sandbox"] is True
    task = _run(server, "boxed")
    assert task["status"] == "completed" and "bwrap" in _text(server, task) and "unsandboxed" not in _text(server, task)
    assert "IS_SANDBOX=1" in _text(server, task)  # Claude Code run by a root daemon may run unattended there

    off = server.cli("agent", "create", "--name", "open", "--provider", "command", "--command", shlex.join(WHERE),
                     "--no-sandbox")
    assert "not sandboxed" in off.stderr and REACH in off.stderr
    assert server.api("GET", "/api/agents/open")["sandbox"] is False
    task = _run(server, "open")
    text = _text(server, task)
    assert task["status"] == "completed" and "bwrap" not in text and "IS_SANDBOX=unset" in text, text
    first = server.api("GET", f"/api/tasks/{task['id']}/messages")[0]["content"]
    assert first["event"] == "unsandboxed" and REACH in first["message"]  # the task page says it too
    updated = server.cli("agent", "update", "boxed", "--no-sandbox")
    assert REACH in updated.stderr


def test_without_bubblewrap_the_daemon_says_how_to_install_it_and_refuses_sandboxed_runs(
        server, start_daemon, tmp_path):
    missing = str(tmp_path / "no-bwrap-here")
    ran = tmp_path / "ran"
    daemon = start_daemon(PREDICTORX_BWRAP=missing)
    wait_until(lambda: "apt-get install bubblewrap" in daemon.output(), what="the daemon to say how to install it")
    assert "sandbox: unavailable" in daemon.output()
    server.api("POST", "/api/agents", {"name": "boxed", "provider": "command", "command": ["touch", str(ran)]})
    task = _run(server, "boxed")
    assert task["status"] == "failed" and "apt-get install bubblewrap" in task["failure_reason"], task
    assert "--no-sandbox" in task["failure_reason"] and not ran.exists()
    # Its owner may turn the sandbox off for that agent: then it runs, unconfined, and says so.
    server.api("PATCH", "/api/agents/boxed", {"sandbox": False})
    task = _run(server, "boxed")
    assert task["status"] == "completed" and ran.exists()


def test_a_daemon_started_no_sandbox_warns_and_runs_every_agent_unconfined(server, start_daemon, tmp_path):
    daemon = start_daemon(PREDICTORX_BWRAP=str(tmp_path / "no-bwrap-here"), args=("--no-sandbox",))
    wait_until(lambda: "--no-sandbox runs every agent of this daemon unconfined" in daemon.output(),
               what="the daemon's warning")
    assert REACH in daemon.output()
    server.api("POST", "/api/agents", {"name": "boxed", "provider": "command", "command": WHERE})
    task = _run(server, "boxed")
    assert task["status"] == "completed" and "unsandboxed" in _text(server, task)
