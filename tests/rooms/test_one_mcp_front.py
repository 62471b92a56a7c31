"""Issue 30: a Claude Code run gets ONE MCP server — `predictorx mcp`'s front lists agents-room's
tools beside its own and forwards their calls to agents-room's own front, started on the first such
call (workflowmcp/room_forward.py) — when its agents-room allows it (`run-config
--platform-forwards-mcp`); an older agents-room keeps two servers. The front's forwarding in
isolation (a dying or silent child, what env it gets): tests/test_harness_mcp_forward.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from predictorx.daemon import rooms
from room_runs import repo, room_run
from predictorx.daemon.workflowhooks import mcp_setup

AGENT_ENV = {"PREDICTORX_SERVER_URL": "http://127.0.0.1:9", "PREDICTORX_TOKEN": "task-token-secret",
             "PREDICTORX_ISSUE": "7", "PREDICTORX_TASK_ID": "t-1"}


_run, _repo = room_run, repo


def _assemble(provider: str, env_root: Path, cwd: Path) -> tuple[list[str], dict[str, str]]:
    """The run's extra CLI arguments and environment, as the daemon's runner puts them together."""
    env_root.mkdir(parents=True, exist_ok=True)
    args, env, _ = rooms.room_setup(_run(provider), env_root, cwd)
    mcp = mcp_setup(provider, env_root, AGENT_ENV, [], rooms.forward_file(env_root) if env else None)
    return [*args, *mcp], env


def _servers(args: list[str]) -> dict[str, Any]:
    configs = [Path(args[i + 1]) for i, a in enumerate(args) if a == "--mcp-config"]
    return {name: s for c in configs for name, s in json.loads(c.read_text())["mcpServers"].items()}


def _talk(server: dict[str, Any], env: dict[str, str], calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The front as Claude Code starts it: handshake, tools/list, then `calls`; its replies by id."""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]
    lines += [{"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call", "params": {"name": n, "arguments": a}}
              for i, (n, a) in enumerate(calls)]
    p = subprocess.run([server["command"], *server["args"]], input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=120, env={**os.environ, **env, **server.get("env", {})})
    replies = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["id"] for r in replies] == list(range(2 + len(calls))), p.stderr
    return replies


def test_a_claude_run_has_one_mcp_server_offering_both_tool_sets_and_forwarding_agents_rooms(tmp_path, monkeypatch):
    monkeypatch.delenv("PREDICTORX_AGENTS_ROOM", raising=False)
    rooms.SERVER.stop()
    args, env = _assemble("claude", tmp_path / "env", _repo(tmp_path))
    assert args.count("--mcp-config") == 1 and list(_servers(args)) == ["predictorx"]
    person = json.loads(subprocess.run([rooms.agents_room_command()[0], "join", "--room", env["AGENTS_ROOM_ROOMS"],
                                        "--label", "person", "--json"], capture_output=True, text=True, timeout=60,
                                       check=True).stdout)["session"]
    sid = env["AGENTS_ROOM_SESSION"]
    replies = _talk(_servers(args)["predictorx"], env, [
        ("msg_send", {"session": sid, "to": person, "body": "hello from the run"}),
        ("room_who", {"session": sid})])
    names = {t["name"] for t in replies[1]["result"]["tools"]}
    assert {"harness_state", "workflow_complete", "handoff_write"} <= names  # predictorx's own
    assert {"msg_send", "msg_recv", "room_join", "room_who"} <= names  # agents-room's
    assert "agents-room connects you" in replies[0]["result"]["instructions"]
    sent, who = replies[2]["result"], replies[3]["result"]
    assert not sent.get("isError") and not who.get("isError"), (sent, who)
    assert "person" in json.dumps(who)
    got = subprocess.run([rooms.agents_room_command()[0], "recv", "--session", person, "--json"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "hello from the run" in got


def test_codex_and_acp_runs_keep_agents_rooms_own_server(tmp_path, monkeypatch):
    """Codex names MCP tools by server (`mcp__agents_room` namespace) and the ACP adapter keeps the
    `mcp_servers.agents-room.*` overrides: they are not forwarded."""
    monkeypatch.delenv("PREDICTORX_AGENTS_ROOM", raising=False)
    for provider in ("codex", "acp"):
        args, _ = _assemble(provider, tmp_path / provider, _repo(tmp_path / provider))
        assert any(a.startswith("mcp_servers.agents-room.command=") for a in args)
        assert any(a.startswith("mcp_servers.predictorx.command=") for a in args)
        assert not any("--agents-room" in a for a in args) and rooms.forward_file(tmp_path / provider) is None


def test_an_older_agents_room_keeps_two_servers(tmp_path, monkeypatch):
    """An agents-room whose run-config does not know --platform-forwards-mcp (nor --platform-ends-session)
    refuses them as argparse does: the run is configured without them — its own MCP server beside
    `predictorx mcp`, which forwards nothing."""
    real = rooms.agents_room_command()
    old = tmp_path / "old-agents-room"
    old.write_text(f"""#!{sys.executable}
import json, subprocess, sys
args = sys.argv[1:]
known = [a for a in args if a not in ("--platform-forwards-mcp", "--platform-ends-session")]
if known != args:
    print("agents-room: error: unrecognized arguments: " + " ".join(a for a in args if a not in known), file=sys.stderr)
    sys.exit(2)
p = subprocess.run({real!r} + args, capture_output=True, text=True, timeout=60)
out = json.loads(p.stdout)
del out["mcp"], out["platform_forwards_mcp"]
print(json.dumps(out))
""")
    old.chmod(0o755)
    monkeypatch.setenv("PREDICTORX_AGENTS_ROOM", str(old))
    rooms.SERVER.stop()
    rooms._UNKNOWN_FLAGS.clear()
    try:
        args, env = _assemble("claude", tmp_path / "env", _repo(tmp_path))
    finally:
        rooms.SERVER.stop()
        rooms._UNKNOWN_FLAGS.clear()
    servers = _servers(args)
    assert args.count("--mcp-config") == 2 and set(servers) == {"predictorx", "agents-room"}
    assert "--agents-room" not in servers["predictorx"]["args"] and env["AGENTS_ROOM_SESSION"]
    names = {t["name"] for t in _talk(servers["predictorx"], env, [])[1]["result"]["tools"]}
    assert "workflow_complete" in names and "msg_send" not in names
