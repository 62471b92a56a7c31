"""R-ROOM-15: the platform's per-run integration (prepare_agent_run)."""

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from agents_room.integration import AgentRunConfig, prepare_agent_run
from agents_room.room import Room
from agents_room import mcp_stdio

from room_helpers import run_hook_command


def _run_hook(command: str, cfg: AgentRunConfig, data: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "AGENTS_ROOM_DB"}
    env.update(cfg.env)
    return run_hook_command(command, json.dumps(data), env)


def _overrides(args: list[str]) -> dict:
    assert args[::2] == ["-c"] * (len(args) // 2)
    out = {}
    for item in args[1::2]:
        key, value = item.split("=", 1)
        out[key] = tomllib.loads(f"v = {value}")["v"]
    return out


def test_claude_run_joins_project_and_repo_rooms(tmp_path, repos):
    home_before = sorted(p.name for p in (tmp_path / "home").iterdir())
    db = tmp_path / "platform.db"
    cfg = prepare_agent_run(
        "claude", config_dir=tmp_path / "run1", rooms=["project-storefront"], label="storefront/api #42",
        db_path=db, cwd=repos["api"],
    )
    assert cfg.rooms == ["shared:project-storefront"] and cfg.repo_room == "repo:api"
    mcp_file, settings_file = cfg.files
    assert cfg.args == ["--mcp-config", str(mcp_file), "--settings", str(settings_file)]
    assert cfg.env["AGENTS_ROOM_DB"] == str(db) and cfg.env["AGENTS_ROOM_MARKER"] == cfg.marker
    entry = json.loads(mcp_file.read_text())["mcpServers"]["agents-room"]
    assert entry["env"]["AGENTS_ROOM_DB"] == str(db)
    hooks = json.loads(settings_file.read_text())["hooks"]
    # Joined before the CLI starts (Claude Code runs SessionStart hooks before its first model
    # request): no SessionStart hook; the session goes to the hooks in the environment, and what
    # that hook would have told the model comes back for the prompt.
    assert "SessionStart" not in hooks and cfg.env["AGENTS_ROOM_SESSION"] == cfg.session
    assert f"you are session {cfg.session} (storefront/api #42) in rooms repo:api, shared:project-storefront" in cfg.intro
    r = Room.open(db)
    s = r.who()["sessions"][0]
    assert s["session"] == cfg.session and s["label"] == "storefront/api #42"
    assert s["rooms"] == ["repo:api", "shared:project-storefront"]
    assert s["autonomy"] == "hold"  # a headless run is never at wake (issue 9)
    assert r.session_row(cfg.session)["tags"] == '["headless"]'
    stops = [h for g in hooks["Stop"] for h in g["hooks"]]
    assert len(stops) == 1 and "--wake" not in stops[0]["command"] and "async" not in stops[0]
    # the user's own config was not touched
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == home_before


def test_claude_run_hooks_use_the_session_joined_ahead(tmp_path, repos):
    """The hooks of a headless Claude Code run act as the session run-config joined: the first one
    binds it to the chat (its key, the harness's pid); SessionEnd ends it; another chat that
    inherited the environment (a nested claude) is not given it."""
    db = tmp_path / "platform.db"
    cfg = prepare_agent_run("claude", config_dir=tmp_path / "run", rooms=["shared:p"], label="x", db_path=db,
                            cwd=repos["api"])
    hooks = json.loads(cfg.files[1].read_text())["hooks"]
    post = hooks["PostToolUse"][0]["hooks"][0]["command"]
    r = Room.open(db)
    person = r.join(cwd=str(repos["api"]), rooms=["shared:p"], label="person")["session"]
    r.send(person, "*", "hello")
    call = {"session_id": "chat-1", "cwd": str(repos["api"]), "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": "ls"}}
    res = _run_hook(post, cfg, call)
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"1 unread message for {cfg.session}" in ctx and "you are session" not in ctx  # the intro was in the prompt
    row = r.session_row(cfg.session)
    assert row["harness_key"] == "chat-1" and row["pid"] == os.getpid()
    assert len(r.who()["sessions"]) == 2
    # a nested chat with the same environment joins as itself
    nested = _run_hook(post, cfg, {**call, "session_id": "chat-2"})
    assert "you are session" in json.loads(nested.stdout)["hookSpecificOutput"]["additionalContext"]
    assert cfg.session not in json.loads(nested.stdout)["hookSpecificOutput"]["additionalContext"].split(" in rooms")[0]
    assert len(r.who()["sessions"]) == 3
    end = hooks["SessionEnd"][0]["hooks"][0]["command"]
    _run_hook(end, cfg, {"session_id": "chat-1", "hook_event_name": "SessionEnd"})
    assert r.session_row(cfg.session)["ended_at"] is not None


async def test_claude_run_mcp_registration_reaches_the_same_store(tmp_path, repos):
    db = tmp_path / "platform.db"
    cfg = prepare_agent_run("claude", config_dir=tmp_path / "run", rooms=["shared:p"], label="x", db_path=db, cwd=repos["web"])
    entry = json.loads(cfg.files[0].read_text())["mcpServers"]["agents-room"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"], cwd=str(repos["web"]))
    async with Client(params, read_timeout_seconds=30) as c:
        res = await c.call_tool("room_join", {"rooms": ["shared:p"]})
        assert not res.is_error
    assert Room.open(db).who()["sessions"][0]["rooms"] == ["repo:web", "shared:p"]


def test_codex_run_overrides(tmp_path, repos):
    db = tmp_path / "platform.db"
    cfg = prepare_agent_run("codex", config_dir=tmp_path / "run2", rooms=["shared:project-storefront"], label="web",
                            db_path=db, cwd=repos["web"], autonomy="hold")
    # Codex 0.169 runs no untrusted hook; a headless run has nobody to trust ours (issue 9)
    assert cfg.args[0] == "--dangerously-bypass-hook-trust"
    ov = _overrides(cfg.args[1:])
    assert ov["mcp_servers.agents-room.args"][-2:] == [str(Path(mcp_stdio.__file__)), "--serve"]  # issue 9: started as a file
    assert ov["mcp_servers.agents-room.env"]["AGENTS_ROOM_DB"] == str(db)
    assert ov["features.hooks"] is True and "features.codex_hooks" not in ov  # issue 9: Codex 0.169 reads [features].hooks
    # A headless Codex run's session is joined ahead, as Claude Code's (issue 30): no SessionStart
    # hook, the platform puts `intro` in the prompt; its other hooks start Python only when their
    # doorbell rings (Codex runs a hook's command with bash -c).
    assert set(k for k in ov if k.startswith("hooks.")) == {"hooks.PreToolUse", "hooks.PostToolUse", "hooks.Stop"}
    s = Room.open(db).who()["sessions"][0]
    assert s["session"] == cfg.session and s["harness"] == "codex" and s["autonomy"] == "hold"
    assert s["rooms"] == ["repo:web", "shared:project-storefront"] and f"you are session {cfg.session}" in cfg.intro
    stop = ov["hooks.Stop"][0]["hooks"][0]["command"]
    assert stop.startswith("[ -e ") and "|| exit 0; exec " in stop
    post = ov["hooks.PostToolUse"][0]["hooks"][0]["command"]
    assert "|| exit 0; exec " not in post  # it records what apply_patch wrote: ungated in a folder others share
    assert cfg.files[0].read_text().count("\n") == len(cfg.args[1:]) // 2
    own = prepare_agent_run("codex", config_dir=tmp_path / "run3", rooms=[], label="own", db_path=db, cwd=repos["web"],
                            own_checkout=True)
    assert own.records_reads is False
    assert "|| exit 0; exec " in _overrides(own.args[1:])["hooks.PostToolUse"][0]["hooks"][0]["command"]


def test_two_repos_one_project_can_talk(tmp_path, repos):
    db = tmp_path / "p.db"
    runs = {
        name: prepare_agent_run(h, config_dir=tmp_path / name, rooms=["project-shop"], label=name, db_path=db, cwd=repos[name])
        for name, h in (("api", "claude"), ("web", "codex"))
    }
    assert runs["api"].session and runs["web"].session  # both joined by prepare_agent_run
    r = Room.open(db)
    assert r.send(runs["api"].session, "*", "the /orders API now pages")["recipient_ids"] == [runs["web"].session]
    # The Codex run's next tool call hears of it: its doorbell rang, so its gated hook starts Python.
    post = _overrides(runs["web"].args[1:])["hooks.PostToolUse"][0]["hooks"][0]["command"]
    res = _run_hook(post, runs["web"], {"session_id": "chat-web", "cwd": str(repos["web"]), "hook_event_name": "PostToolUse",
                                        "tool_name": "shell", "tool_input": {"command": ["ls"]}, "turn_id": "t1"})
    assert res.returncode == 0 and "1 unread" in res.stdout, res


def test_rejects_unknown_harness_and_bad_rooms(tmp_path, repos):
    with pytest.raises(ValueError):
        prepare_agent_run("gemini", config_dir=tmp_path, rooms=[], label="x", cwd=repos["api"])
    with pytest.raises(ValueError):
        prepare_agent_run("claude", config_dir=tmp_path, rooms=["bad name"], label="x", cwd=repos["api"])
