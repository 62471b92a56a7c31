"""A hook process starts on every tool call, and the harness waits for it: a run's hooks start as
the file hook_entry.py, and the usual calls (nothing to deliver) import neither the CLI, argparse,
runpy, pathlib nor json/re/enum. Tests of what is imported, not of timing; and that both entries
answer alike."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from agents_room import harness_config
from agents_room.room import Room

from room_helpers import PY, hook_argv, run_cli

#: what the usual hook call must not import (each costs start-up time on every tool call)
HEAVY = {"runpy", "argparse", "pathlib", "typing", "json", "re", "enum", "contextlib", "urllib.parse", "ipaddress",
         "fnmatch", "hashlib", "configparser", "agents_room.cli", "agents_room.commands", "agents_room.integration",
         "agents_room.install", "agents_room.harness_config", "agents_room.mcp_server", "agents_room.mcp_stdio", "mcp",
         "site"}  # (started with -S: no site-packages or .pth files looked at, issue 30)


def _settings(tmp_path, repo) -> tuple[dict, dict]:
    res = run_cli("run-config", "--harness=claude", f"--config-dir={tmp_path / 'run'}", f"--cwd={repo}",
                  "--room=shared:shop", "--label=api #1", cwd=repo)
    assert res.returncode == 0, res.stderr
    cfg = json.loads(res.stdout)
    return json.loads(Path(cfg["files"][1]).read_text())["hooks"], cfg["env"]


def _imports(argv: list[str], data: dict, env: dict, cwd) -> tuple[subprocess.CompletedProcess, set[str]]:
    p = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], input=json.dumps(data), capture_output=True,
                       text=True, env={**os.environ, **env}, cwd=cwd, timeout=30)
    names = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    return p, names


def test_a_runs_hooks_start_as_a_file_and_the_usual_calls_import_little(tmp_path, repos, db):
    hooks, env = _settings(tmp_path, repos["web"])
    cmds = {ev: hook_argv(groups[0]["hooks"][0]["command"]) for ev, groups in hooks.items()}
    assert set(cmds) == {"PreToolUse", "PostToolUse", "Stop", "SessionEnd"}
    for ev, argv in cmds.items():
        assert argv[0] == sys.executable and argv[1] == "-S", (ev, argv)
        assert argv[2].endswith(os.path.join("agents_room", "hook_entry.py")), (ev, argv)
        assert argv[3] == "hook" and harness_config._ours(shlex.join(argv))
    chat = {"session_id": "chat-1", "cwd": str(repos["web"])}
    bash = {**chat, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a\n", "stderr": "", "interrupted": False}}
    first = subprocess.run(cmds["PostToolUse"], input=json.dumps(bash), capture_output=True, text=True,
                           env={**os.environ, **env}, cwd=repos["web"], timeout=30)
    assert first.returncode == 0 and first.stdout == "" and first.stderr == ""
    r = Room.open(db)
    sid = env["AGENTS_ROOM_SESSION"]
    assert r.session_row(sid)["harness_key"] == "chat-1"  # the hook ran (it bound the run's session), not failed open
    r.conn.execute("UPDATE sessions SET last_seen=1 WHERE id=?", (sid,))
    # the usual PostToolUse: a bound session, nothing to deliver
    p, names = _imports(cmds["PostToolUse"], bash, env, repos["web"])
    assert p.returncode == 0 and p.stdout == "", p.stderr
    assert not names & HEAVY, sorted(names & HEAVY)
    assert "agents_room.hooks" in names and r.session_row(sid)["last_seen"] > 1  # it did its work
    # Stop with nothing to hold for
    p, names = _imports(cmds["Stop"], {**chat, "hook_event_name": "Stop", "stop_hook_active": False}, env, repos["web"])
    assert p.returncode == 0 and p.stdout == "" and not names & HEAVY, sorted(names & HEAVY)
    # the same call from a Codex chat (its PostToolUse follows every tool call too)
    other = r.join(harness="codex", harness_key="thread-1", cwd=str(repos["web"]))["session"]
    r.conn.execute("UPDATE sessions SET last_seen=1, wake_waiter='w' WHERE id=?", (other,))
    codex = {"session_id": "thread-1", "cwd": str(repos["web"]), "hook_event_name": "PostToolUse", "turn_id": "t1",
             "tool_name": "shell", "tool_input": {"command": ["ls"]}}
    argv = [sys.executable, *cmds["PostToolUse"][1:3], f"--db={db}", "hook", "--event=PostToolUse", "--harness=codex"]
    p, names = _imports(argv, codex, {}, repos["web"])
    assert p.returncode == 0 and p.stdout == "" and not names & HEAVY, sorted(names & HEAVY)
    assert r.session_row(other)["wake_waiter"] is None and r.session_row(other)["last_seen"] > 1


def test_installed_hooks_keep_the_module_entry_and_find_the_file_entry_as_ours():
    installed = harness_config.hooks_spec("claude", autonomy="hold")
    command = installed["PostToolUse"][0]["hooks"][0]["command"]
    assert " -m agents_room hook --event=PostToolUse " in command
    fast = harness_config.hooks_spec("claude", autonomy="hold", fast=True)
    merged = harness_config.merge_hooks(fast, installed)  # a reinstall over a run's hooks replaces them
    assert [h["command"] for g in merged["PostToolUse"] for h in g["hooks"]] == [command]


def _normalise(text: str, ids: list[str]) -> str:
    for i, sid in enumerate(ids):
        text = text.replace(sid, f"<s{i}>")
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<TIME>", text)


ENTRY = str(Path(harness_config.__file__).with_name("hook_entry.py"))


@pytest.mark.parametrize("event,extra,stdin,chat", [
    ("PostToolUse", [], None, "chat-1"),
    ("Stop", [], None, "chat-1"),
    ("PreToolUse", [], None, "chat-1"),
    ("SessionEnd", [], None, "chat-1"),
    ("PostToolUse", [], "not json", "chat-1"),
    ("PostToolUse", [], "[1, 2]", "chat-1"),
    ("Nope", [], None, "chat-1"),  # argparse's usage error: fails open
    ("Stop", ["--bogus"], None, "chat-1"),
    ("PostToolUse", ["--autonomy=wakee", "--room=shared:shop", "--label=new"], None, "chat-new"),  # joins, with a warning
])
def test_the_file_entry_answers_as_the_module_entry(tmp_path, repos, db, event, extra, stdin, chat):
    """Same stdout, stderr, exit code and store effects, given the same store: with mail to deliver,
    a lease to warn of, a chat to join, and input the hook must fail open on."""
    outs = []
    for entry in (["-m", "agents_room"], [ENTRY]):
        dbi = tmp_path / f"{len(outs)}.db"
        r = Room.open(dbi)
        me = r.join(harness="claude", harness_key="chat-1", cwd=str(repos["web"]), autonomy="hold")["session"]
        peer = r.join(harness="claude", harness_key="chat-2", cwd=str(repos["web"]), label="peer")["session"]
        r.lease_acquire(peer, ["src/app.py"])
        r.send(peer, me, "please look at app.py", importance="urgent")
        data = {"session_id": chat, "cwd": str(repos["web"]),
                "hook_event_name": event, "tool_name": "Edit", "tool_input": {"file_path": "src/app.py"},
                "stop_hook_active": False}
        p = subprocess.run([PY, *entry, f"--db={dbi}", "hook", f"--event={event}", "--harness=claude", *extra],
                           input=stdin if stdin is not None else json.dumps(data), capture_output=True, text=True,
                           cwd=repos["web"], timeout=30)
        ids = [me, peer] + [row["id"] for row in r.conn.execute("SELECT id FROM sessions WHERE id NOT IN (?, ?)", (me, peer))]
        rows = [tuple(_normalise(str(v), ids) for v in tuple(row)[1:]) for row in
                r.conn.execute("SELECT kind, session_id, data FROM events ORDER BY id")]
        state = [(row["state"], row["offer_count"]) for row in r.conn.execute("SELECT * FROM deliveries ORDER BY rowid")]
        ended = [row["ended_at"] is not None for row in r.conn.execute("SELECT ended_at FROM sessions ORDER BY created_at")]
        outs.append((p.returncode, _normalise(p.stdout, ids), _normalise(p.stderr, ids), rows, state, ended))
        r.close()
    assert outs[0] == outs[1]
    if event in ("PostToolUse", "PreToolUse", "Stop") and stdin is None and "--bogus" not in extra:
        assert outs[0][1], "the scenario has something to say"
