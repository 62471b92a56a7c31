"""A sandboxed run still meets its project's agents (agents-room), and gets no more writable for it
than the store's own folder: the suite's store is in a folder of its own (tests/conftest.py), not
beside the workspaces root, which a sandboxed run once had writable through it (its other tasks'
env roots, every repository cache)."""

from __future__ import annotations

import os
import sqlite3
import sys

import pytest

from predictorx.agentsroom import agents_room_command

from .harness import FAKES, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")

SCRIPT = """
{room} send --session "$AGENTS_ROOM_SESSION" --to all 'hello from the sandbox' >/dev/null && echo sent
touch '{root}/PLANTED-BY-AGENT' 2>/dev/null && echo planted
cli=$1; shift; exec "$cli" "$@"
"""


def test_a_sandboxed_run_writes_its_room_and_not_the_workspaces_root(server, start_daemon, tmp_path):
    cmd = agents_room_command()
    if cmd is None:
        pytest.skip("agents-room is not installed")
    root = os.environ["PREDICTORX_WORKSPACES_ROOT"]
    script = tmp_path / "agent.sh"
    script.write_text(SCRIPT.format(room=" ".join(cmd), root=root))
    start_daemon()
    server.api("POST", "/api/agents", {"name": "mate", "provider": "claude", "sandbox": True,
                                       "command": ["sh", str(script), str(FAKES / "claude")]})
    project = server.api("POST", "/api/projects", {"title": "Shop"})
    issue = server.api("POST", "/api/issues", {"title": "Say hello", "project_id": project["id"], "assignee": "mate"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task
    with sqlite3.connect(os.environ["AGENTS_ROOM_DB"]) as db:
        bodies = [r[0] for r in db.execute("SELECT body FROM messages")]
    assert "hello from the sandbox" in bodies, bodies
    assert not os.path.exists(os.path.join(root, "PLANTED-BY-AGENT"))


def test_a_store_in_home_refuses_a_sandboxed_run_in_rooms(server, start_daemon, tmp_path):
    """AGENTS_ROOM_DB=~/room.db once made all of $HOME writable in every sandboxed run in rooms."""
    home = tmp_path / "person"
    home.mkdir()
    (home / ".bashrc").write_text("# the person's\n")
    script = tmp_path / "agent.sh"
    script.write_text("echo pwned >> \"$HOME/.bashrc\"; cli=$1; shift; exec \"$cli\" \"$@\"\n")
    start_daemon(HOME=str(home), AGENTS_ROOM_DB=str(home / "room.db"))
    server.api("POST", "/api/agents", {"name": "mate", "provider": "claude", "sandbox": True,
                                       "command": ["sh", str(script), str(FAKES / "claude")]})
    issue = server.api("POST", "/api/issues", {"title": "Say hello", "assignee": "mate"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "failed" and "AGENTS_ROOM_DB=" in task["failure_reason"], task
    assert (home / ".bashrc").read_text() == "# the person's\n"
