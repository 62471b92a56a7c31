"""agents-room inside real Claude Code and Codex runs (R-ROOM-15, R-EX-9), in worktree mode:

- the agent joins the project's room and the repository's room, named as the person's own session
  in that repository is (`repo:myrepo`, not the worktree's folder), and its first request tells the
  model its session (Claude Code: joined by `run-config` before the CLI starts, the intro in the
  prompt — no SessionStart hook delays its first request; Codex: its SessionStart hook);
- a message the person sends to the project room while the agent works reaches the model as
  hook context (agents-room's nudge: how many, where, from whom, how to read them) in its very
  next request (asserted at the model server);
- the agents-room MCP tools are offered to the model;
- the headless run ends within 2 s of the CLI's result (no Stop hook holds it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from predictorx.agentsroom import project_room

from .conftest import require
from .scenario import wait_until, work_command

AGENTS_ROOM = str(Path(sys.executable).with_name("agents-room"))
NOTE = "NOTE-FROM-ROOM: the /orders API now paginates"


def _room(*args: str, cwd: Path | None = None) -> dict:
    p = subprocess.run([AGENTS_ROOM, *args, "--json"], capture_output=True, text=True, timeout=30, cwd=cwd,
                       env={**os.environ})
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("provider", ["claude", "codex"])
def test_a_real_run_joins_its_rooms_hears_the_room_and_ends_at_its_result(scenario, provider, tmp_path):
    s = scenario(provider)
    repo = s.person_repo("myrepo")
    # Where the sandboxed agent can see it: the agents-room store's folder, which every run shares
    # (its own /tmp is private).
    marker = Path(os.environ["AGENTS_ROOM_DB"]).parent / f"{provider}-go"
    # Turn 1's shell waits until the test has spoken in the room.
    s.model.command = work_command(s.cli, f"; while [ ! -f {marker} ]; do sleep 0.1; done")
    project = s.project(repo, "worktree")
    room = "shared:" + project_room(project["id"], project["title"])
    # The person's own session in their repository, in the project's room.
    person = _room("join", "--room", room, "--label", "person", cwd=repo)
    person_id = person.get("session") or person["session_id"]

    if provider == "codex":  # gpt-5.5 reaches MCP tools through tool_search (test below)
        s.model.search = "agents-room messages msg_send room_join"
    _issue, run = s.assign(project)
    first = s.model.wait_for(lambda rs: [r for r in rs if r.turn == "tool"], timeout=120)[0]
    agent = wait_until(lambda: [x for x in _room("who")["sessions"] if x["label"].startswith(s.agent_name)],
                       30, what="the agent's session to join")[0]
    assert room in agent["rooms"] and agent["repo"] == _room("who", "--session", person_id)["sessions"][0]["repo"]
    assert agent["repo"] == "repo:myrepo" and "repo:myrepo" in agent["rooms"]
    # The model is told its session and rooms in its first request: in the prompt, the session joined
    # by run-config before the CLI started (Codex too since issue 30; before, its SessionStart hook's).
    assert f"you are session {agent['session']}" in first.text and room in first.text
    # Its MCP tools are offered to the model (Codex: in the tool_search output its search brought).
    offered = [r for r in s.model.conversation() if "msg_send" in r.text and "room_join" in r.text]

    _room("send", "--session", person_id, "--room", room, "--to", "*", NOTE)
    # its hooks start Python only when its doorbell rings (agents-room's bells.py; Codex's since issue 30)
    assert (Path(os.environ["AGENTS_ROOM_DB"]).parent / "bells" / agent["session"]).exists()
    marker.touch()
    task = s.wait(run["id"])
    offered = offered or [r for r in s.model.conversation() if "msg_send" in r.text and "room_join" in r.text]
    assert offered, [t.get("name") for t in first.body.get("tools") or []]
    answer = next(r for r in s.model.conversation() if r.turn == "answer")
    # The hook's nudge: who wrote, in which room, and how to read it (agents-room's MCP msg_recv).
    nudge = re.compile(rf"agents-room: 1 unread message for {agent['session']} via [^\"]*{re.escape(room)}[^\"]* "
                       rf"from person \({person_id}\)")
    assert nudge.search(answer.text), json.dumps((answer.body.get("messages") or answer.body.get("input"))[-2:])[-3000:]
    assert not nudge.search(first.text)
    finished = datetime.fromisoformat(task["finished_at"].replace("Z", "+00:00")).timestamp()
    # The CLI's result is the last line of its stream (written as the daemon read it).
    result_at = s.stream_log(task["id"]).stat().st_mtime
    assert result_at >= answer.at
    assert finished - result_at < 2.0, f"the task ended {finished - result_at:.1f} s after the CLI's result"
    # Its session ended with the run — by the daemon, which registered no SessionEnd hook (issue 30;
    # Codex has no SessionEnd event: its session was left to go stale before) — and keeps its rooms.
    assert agent["session"] not in {x["session"] for x in _room("who")["sessions"]}
    assert room in _room("who", "--session", agent["session"])["sessions"][0]["rooms"]


def test_a_real_claude_run_reaches_agents_rooms_tools_through_its_one_mcp_server(scenario):
    """Issue 30: Claude Code gets one MCP server, `predictorx mcp`, which also offers agents-room's
    tools (`mcp__predictorx__msg_send`) and forwards their calls to agents-room's own front, started
    on that first call: the model's msg_send reaches the person's session. (A predictorx tool through
    the same front: test_harness.py.)"""
    s = scenario("claude")
    repo = s.person_repo("myrepo")
    project = s.project(repo, "worktree")
    room = "shared:" + project_room(project["id"], project["title"])
    joined = _room("join", "--room", room, "--label", "person", cwd=repo)
    person_id = joined.get("session") or joined["session_id"]

    def send(req) -> dict:
        own = re.search(r"you are session (s-[0-9a-f]+)", json.dumps(req.body))
        return {"session": own.group(1) if own else "s-unknown", "to": person_id, "body": NOTE}
    s.model.call = ("mcp__predictorx__msg_send", send)
    s.model.answer = "Told the person."
    _issue, run = s.assign(project)
    task = s.wait(run["id"])
    first = s.model.conversation()[0]
    assert "mcp__predictorx__msg_send" in first.text and "mcp__predictorx__workflow_complete" in first.text
    assert "mcp__agents-room__" not in first.text and "mcp__agents_room__" not in first.text
    result = [m for m in s.messages(task["id"]) if m["kind"] == "tool_result"][-1]
    assert not result["content"].get("is_error"), result
    got = _room("recv", "--session", person_id)
    assert NOTE in json.dumps(got), got


def test_a_real_claude_run_with_nothing_for_its_hooks_starts_none_of_them(scenario):
    """A Claude Code run's tool call and Stop with no mail, lease or hold: its hooks' shell finds no
    doorbell and exits — no hook Python started (it would have bound the run's session to the chat)."""
    import sqlite3

    s = scenario("claude")
    repo = s.person_repo("myrepo")
    s.model.command = work_command(s.cli)
    project = s.project(repo, "worktree")
    _issue, run = s.assign(project)
    s.wait(run["id"])
    assert [r.turn for r in s.model.conversation()][-2:] == ["tool", "answer"]
    conn = sqlite3.connect(os.environ["AGENTS_ROOM_DB"])
    rows = conn.execute("SELECT id, harness_key, ended_at FROM sessions WHERE label LIKE ?", (s.agent_name + "%",)).fetchall()
    conn.close()
    assert len(rows) == 1 and rows[0][2] is not None, rows  # its session, ended by the daemon
    assert rows[0][1] is None, rows  # no hook of it ran Python
    assert not (Path(os.environ["AGENTS_ROOM_DB"]).parent / "bells" / rows[0][0]).exists()


def test_codex_offers_the_agents_room_mcp_tools(tmp_path):
    """The same run the daemon makes, without the daemon: Codex with agents-room's run-config
    (which already holds --dangerously-bypass-hook-trust; Codex refuses it twice).

    Codex 0.169 decides per model how MCP tools reach it: for a model its catalogue marks
    `supports_search_tool` (gpt-5.5, the default here) it defers them behind its `tool_search`
    tool — the model searches, and Codex answers with a `tool_search_output` holding the
    `mcp__agents_room` namespace and its functions; for any other model it lists that namespace
    in the request's tools directly. No setting switches the deferral off (docs/agents.md)."""
    from .clis import CODEX
    from .modelserver import ResponsesServer

    codex = require("codex")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    cfg = json.loads(subprocess.run([AGENTS_ROOM, "run-config", "--harness=codex", f"--config-dir={tmp_path / 'ar'}",
                                     f"--cwd={repo}", "--label=codex-1", "--room=shared:p"],
                                    capture_output=True, text=True, timeout=30, check=True).stdout)
    assert "--dangerously-bypass-hook-trust" in cfg["args"]

    def run(*model_args: str) -> list:
        with ResponsesServer(command="true", answer="ok") as model:
            model.search = "agents-room messages msg_send room_join"
            env = {**os.environ, **CODEX.environment(tmp_path / "home", model), **cfg["env"]}
            p = subprocess.run([str(codex.path()), "exec", "--json", "--skip-git-repo-check",
                                "--dangerously-bypass-approvals-and-sandbox", *cfg["args"], *model_args, "hi"],
                               cwd=repo, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
            assert p.returncode == 0, p.stderr.decode()[-2000:]
            return list(model.requests)

    def agents_room_namespace(tools: list) -> set[str]:
        ns = next((t for t in tools if t.get("type") == "namespace" and t.get("name") == "mcp__agents_room"), None)
        return {f["name"] for f in (ns or {}).get("tools") or []}

    # gpt-5.5: deferred; the model's tool_search brings the namespace into the conversation.
    searched = run()
    assert searched[0].turn == "search" and not agents_room_namespace(searched[0].body["tools"])
    found = [i for i in searched[1].body["input"] if isinstance(i, dict) and i.get("type") == "tool_search_output"]
    assert found and {"msg_send", "msg_recv", "room_join"} <= agents_room_namespace(found[0]["tools"]), found
    assert searched[1].turn == "tool" and searched[-1].turn == "answer"
    # A model without search support: the namespace is among the request's tools from the start.
    direct = run("--model", "scripted-model")
    assert direct[0].turn == "tool"
    assert {"msg_send", "msg_recv", "room_join"} <= agents_room_namespace(direct[0].body["tools"])
