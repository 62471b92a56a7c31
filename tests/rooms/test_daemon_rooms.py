"""The daemon's wiring of agents-room (R-ROOM-15, issue 10 item 7, issue 9): it runs the
`agents-room` program for a run's configuration, imports nothing of it, never holds a headless run,
and a missing or failing program never stops a task."""

import ast
import json
import logging
import subprocess
import sys
import time
from pathlib import Path

from predictorx.daemon import rooms
from room_runs import repo, room_run

SRC = Path(rooms.__file__).resolve().parents[1]


_run, _repo = room_run, repo


def test_room_setup_asks_the_agents_room_program_for_a_headless_run(tmp_path, monkeypatch):
    monkeypatch.delenv("PREDICTORX_AGENTS_ROOM", raising=False)
    args, env, intro = rooms.room_setup(_run(), tmp_path / "env", _repo(tmp_path))
    settings = json.loads(Path(args[args.index("--settings") + 1]).read_text())
    assert env["AGENTS_ROOM_ROOMS"] == "shared:project-shop-01234567" and env["AGENTS_ROOM_LABEL"].startswith("claude-1")
    post = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    assert "--autonomy=hold" in post  # headless: never wake (issue 9)
    assert not any("--wake" in h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"])
    # Claude Code: the session is joined before the CLI starts (no SessionStart hook before its first
    # request) and the model learns it from the prompt.
    assert "SessionStart" not in settings["hooks"]
    sid = env["AGENTS_ROOM_SESSION"]
    assert f"you are session {sid}" in intro and "repo:shop" in intro and "shared:project-shop-01234567" in intro
    # Codex too (issue 30): joined ahead, told in the prompt, its hooks gated by doorbells.
    cx_args, cx_env, cx_intro = rooms.room_setup(_run("codex"), tmp_path / "cx", _repo(tmp_path / "c"))
    assert "features.hooks=true" in cx_args and not any(a.startswith("hooks.SessionStart=") for a in cx_args)
    assert f"you are session {cx_env['AGENTS_ROOM_SESSION']}" in cx_intro
    assert any(a.startswith("hooks.Stop=") and "|| exit 0; exec " in a for a in cx_args)
    assert rooms.room_setup(_run("gemini"), tmp_path / "g", tmp_path) == ([], {}, "")


def test_a_missing_or_failing_agents_room_never_stops_a_task(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("PREDICTORX_AGENTS_ROOM", str(tmp_path / "no-such-program"))
    with caplog.at_level(logging.WARNING, logger="predictorx.daemon"):
        assert rooms.room_setup(_run(), tmp_path / "env", tmp_path) == ([], {}, "")
    assert "runs without agents-room" in caplog.text
    monkeypatch.setenv("PREDICTORX_AGENTS_ROOM", "false")
    assert rooms.room_setup(_run(), tmp_path / "env", tmp_path) == ([], {}, "")


def test_predictorx_imports_nothing_of_agents_room():
    """agents-room is used as a program only (issue 10 item 7)."""
    offenders = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(SRC)}: {n}" for n in names if n.split(".")[0] == "agents_room"]
    assert offenders == []


def _serving(timeout: float = 20.0) -> subprocess.Popen:
    deadline = time.monotonic() + timeout
    while rooms.SERVER._proc is None:
        assert time.monotonic() < deadline, "no agents-room run-config --serve was started"
        time.sleep(0.02)
    return rooms.SERVER._proc


def test_one_agents_room_process_configures_the_runs_and_ends_with_the_daemon(tmp_path, monkeypatch):
    """`agents-room run-config --serve` is started a little after the first run that needed it (not
    beside that run's own start) and then answers every run's configuration without a process
    start (issue 9); it exits when the daemon stops."""
    monkeypatch.delenv("PREDICTORX_AGENTS_ROOM", raising=False)
    monkeypatch.setattr(rooms, "START_DELAY_S", 0.05)
    rooms.SERVER.stop()
    rooms.room_setup(_run(), tmp_path / "e1", _repo(tmp_path / "a"))  # the plain command
    server = _serving()
    sessions = set()
    for i in range(2):
        args, env, intro = rooms.room_setup(_run(), tmp_path / f"e{i + 2}", _repo(tmp_path / f"b{i}"))
        assert args[1].startswith(str(tmp_path / f"e{i + 2}")) and f"you are session {env['AGENTS_ROOM_SESSION']}" in intro
        sessions.add(env["AGENTS_ROOM_SESSION"])
    assert len(sessions) == 2 and rooms.SERVER._proc is server and server.poll() is None  # the same process, still there
    rooms.SERVER.stop()
    assert server.wait(timeout=10) == 0 and rooms.SERVER._proc is None


def test_a_daemon_that_runs_claude_or_codex_starts_it_with_itself(tmp_path, monkeypatch):
    """Its first run does not wait for a Python start either; a daemon without such agents, or with
    rooms off, starts none."""
    monkeypatch.delenv("PREDICTORX_AGENTS_ROOM", raising=False)
    rooms.SERVER.stop()
    rooms.start_ahead([{"provider": "gemini"}, {"provider": "command"}])
    assert rooms.SERVER._proc is None
    monkeypatch.setenv("PREDICTORX_ROOMS", "0")
    rooms.start_ahead([{"provider": "claude"}])
    assert rooms.SERVER._proc is None
    monkeypatch.delenv("PREDICTORX_ROOMS")
    rooms.start_ahead([{"provider": "claude"}])
    server = rooms.SERVER._proc
    assert server is not None and server.poll() is None
    _, env, _ = rooms.room_setup(_run(), tmp_path / "e", _repo(tmp_path))
    assert env["AGENTS_ROOM_SESSION"] and rooms.SERVER._proc is server and server.answered  # it answered the first run
    rooms.SERVER.stop()
    assert server.wait(timeout=10) == 0


def test_an_agents_room_without_serve_gets_the_plain_command(tmp_path, monkeypatch):
    real = rooms.agents_room_command()
    old = tmp_path / "old-agents-room"
    old.write_text(f'#!/bin/sh\nif [ "$2" = "--serve" ]; then echo "unrecognized arguments: --serve" >&2; exit 2; fi\n'
                   f'exec {real[0]} "$@"\n')
    old.chmod(0o755)
    monkeypatch.setenv("PREDICTORX_AGENTS_ROOM", str(old))
    monkeypatch.setattr(rooms, "START_DELAY_S", 0.05)
    rooms.SERVER.stop()
    for i in range(3):
        _, env, _ = rooms.room_setup(_run(), tmp_path / f"e{i}", _repo(tmp_path / f"r{i}"))
        assert env["AGENTS_ROOM_SESSION"]
        deadline = time.monotonic() + 20
        while rooms.SERVER._timer is not None:  # the delayed start it scheduled, if any, has happened
            assert time.monotonic() < deadline, "the delayed agents-room start never happened"
            time.sleep(0.02)
    assert rooms.SERVER._proc is None and (str(old),) in rooms.SERVER._unsupported
    rooms.SERVER.stop()


def test_a_run_that_did_not_end_well_has_its_session_ended(tmp_path, monkeypatch):
    """A run killed before any of its hooks ran leaves the session joined ahead with no process;
    the daemon ends it (and takes it out of its rooms)."""
    monkeypatch.delenv("PREDICTORX_AGENTS_ROOM", raising=False)
    _, env, _ = rooms.room_setup(_run(), tmp_path / "e", _repo(tmp_path))
    sid = env["AGENTS_ROOM_SESSION"]
    who = [rooms.agents_room_command()[0], "who", "--json"]
    assert sid in {s["session"] for s in json.loads(subprocess.run(who, capture_output=True, text=True, check=True).stdout)["sessions"]}
    rooms.end_session(env)
    assert sid not in {s["session"] for s in json.loads(subprocess.run(who, capture_output=True, text=True, check=True).stdout)["sessions"]}
    rooms.SERVER.stop()


def _session(sid: str) -> tuple[float | None, int]:
    """(ended_at, rooms it is in) of an agents-room session, read from the store."""
    import os
    import sqlite3

    db = sqlite3.connect(os.environ["AGENTS_ROOM_DB"])
    try:
        ended = db.execute("SELECT ended_at FROM sessions WHERE id=?", (sid,)).fetchone()[0]
        return ended, db.execute("SELECT count(*) FROM memberships WHERE session_id=?", (sid,)).fetchone()[0]
    finally:
        db.close()


def test_a_run_that_ended_well_has_its_session_ended_by_the_daemon(tmp_path, monkeypatch):
    """Its run registered no SessionEnd hook (a Python process per run, issue 30): the daemon ends
    the session once the run is over, through its `run-config --serve` process, as that hook did —
    leases released, rooms kept for a resume — and only a session the daemon was told to end."""
    monkeypatch.delenv("PREDICTORX_AGENTS_ROOM", raising=False)
    rooms.SERVER.stop()
    rooms.start_ahead([{"provider": "claude"}])
    server = rooms.SERVER._proc
    args, env, _ = rooms.room_setup(_run(), tmp_path / "e", _repo(tmp_path))
    hooks = json.loads(Path(args[args.index("--settings") + 1]).read_text())["hooks"]
    assert "SessionEnd" not in hooks and {"PostToolUse", "Stop"} <= set(hooks)
    sid = env["AGENTS_ROOM_SESSION"]
    assert _session(sid) == (None, 2)  # its project's room and its repo's
    rooms.after_run(env, ended_well=True)
    ended, kept = _session(sid)
    assert ended is not None and kept == 2 and rooms.SERVER._proc is server and server.poll() is None
    rooms.after_run(env, ended_well=True)  # (once only: a second end is not asked for)
    assert _session(sid) == (ended, 2)
    other = {"AGENTS_ROOM_SESSION": "s-00000000"}  # not one of its runs' sessions: left alone
    rooms.after_run(other, ended_well=True)
    rooms.SERVER.stop()
    # With no server there now, ending it would take a process of its own: the run keeps its hook.
    args, env, _ = rooms.room_setup(_run(), tmp_path / "f", _repo(tmp_path / "f"))
    assert "SessionEnd" in json.loads(Path(args[args.index("--settings") + 1]).read_text())["hooks"]
    rooms.after_run(env, ended_well=True)
    assert _session(env["AGENTS_ROOM_SESSION"])[0] is None  # (its SessionEnd hook would end it)
    rooms.SERVER.stop()


def test_an_agents_room_that_does_not_know_platform_ends_session_keeps_its_hook(tmp_path, monkeypatch):
    """An older agents-room (here: its `run-config --serve`) refuses --platform-ends-session: the run
    is configured without it, with its SessionEnd hook, and the daemon does not end that session."""
    real = rooms.agents_room_command()
    old = tmp_path / "old-agents-room"
    old.write_text(f"""#!{sys.executable}
import json, subprocess, sys
assert sys.argv[1:] == ["run-config", "--serve"]
for line in sys.stdin:
    args = json.loads(line)
    if "--platform-ends-session" in args:
        answer = {{"code": 2, "out": "", "err": "error: unrecognized arguments: --platform-ends-session"}}
    else:
        p = subprocess.run({real!r} + ["run-config", *args], capture_output=True, text=True, timeout=60)
        answer = {{"code": p.returncode, "out": p.stdout, "err": p.stderr}}
    print(json.dumps(answer), flush=True)
""")
    old.chmod(0o755)
    monkeypatch.setenv("PREDICTORX_AGENTS_ROOM", str(old))
    rooms.SERVER.stop()
    rooms.start_ahead([{"provider": "claude"}])
    args, env, _ = rooms.room_setup(_run(), tmp_path / "e", _repo(tmp_path))
    settings = json.loads(Path(args[args.index("--settings") + 1]).read_text())
    assert "SessionEnd" in settings["hooks"] and env["AGENTS_ROOM_SESSION"] and rooms.SERVER.serving()
    rooms.after_run(env, ended_well=True)
    assert _session(env["AGENTS_ROOM_SESSION"])[0] is None  # its SessionEnd hook ends it
    rooms.SERVER.stop()
