"""Issue 8, finding 15: a message ttl is finite and at most 30 days; a store that cannot be used
(unreadable, not SQLite, truncated, read-only, newer schema) is one sentence and exit 1 from every
command, `doctor` says what is wrong and what to do, and hooks stay fail-open (R-ROOM-1, R-ROOM-10,
R-ROOM-13)."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

import agents_room
from agents_room.mcp_server import build_server
from agents_room.room import Room, RoomError

from room_helpers import run_cli

SRC = str(Path(agents_room.__file__).resolve().parents[1])  # the folder holding the agents_room package


@pytest.mark.parametrize("ttl", [1e308, float("inf"), float("nan"), 31 * 86400, -1, 0])
def test_finding_15_message_ttl_is_finite_and_at_most_30_days(room, repos, ttl):
    a = room.join(cwd=str(repos["api"]), rooms=["x"])["session"]
    b = room.join(cwd=str(repos["web"]), rooms=["x"])["session"]
    with pytest.raises(RoomError, match="finite number of seconds up to 2592000"):
        room.send(a, "*", "hi", ttl=ttl)
    assert room.send(a, "*", "ok", ttl=30 * 86400)["recipients"] == 1
    assert [m["body"] for m in room.recv(b)["messages"]] == ["ok"]  # nothing stored by the refused sends


@pytest.mark.parametrize("ttl", ["1e308", "inf", "nan", "2592001"])
def test_finding_15_cli_send_refuses_an_unbounded_ttl_in_one_line(db, repos, ttl):
    a = json.loads(run_cli("join", "--room", "x", "--json", cwd=repos["api"]).stdout)["session"]
    b = json.loads(run_cli("join", "--room", "x", "--json", cwd=repos["web"]).stdout)["session"]
    res = run_cli("send", "--session", a, "--to", "*", "--ttl", ttl, "hello")
    assert res.returncode == 1 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and "30 days" in res.stderr
    for args in (["recv", "--session", b], ["history", "--session", b], ["doctor"]):
        ok = run_cli(*args)
        assert ok.returncode == 0 and "Traceback" not in ok.stderr, (args, ok.stderr)


async def test_finding_15_mcp_msg_send_refuses_an_unbounded_ttl(db, repos):
    async with Client(build_server(db)) as c:
        a = (await c.call_tool("room_join", {"rooms": ["x"], "cwd": str(repos["api"])})).structured_content
        bad = await c.call_tool("msg_send", {"session": a["session"], "to": "*", "body": "x", "ttl_seconds": 1e308})
        assert bad.is_error and "30 days" in bad.content[0].text
        bad = await c.call_tool("lease_acquire", {"session": a["session"], "paths": ["a.py"], "ttl_seconds": 1e308})
        assert bad.is_error and "finite" in bad.content[0].text


def test_finding_15_an_old_row_with_an_overflowing_expiry_breaks_nothing_and_doctor_fixes_it(db, repos, clock):
    r = Room.open(db, clock=clock)
    a = r.join(cwd=str(repos["api"]), rooms=["x"])["session"]
    b = r.join(cwd=str(repos["web"]), rooms=["x"])["session"]
    mid = r.send(a, "*", "from an older agents-room")["message_id"]
    r.conn.execute("UPDATE messages SET expires_at=1e308 WHERE id=?", (mid,))  # what `--ttl 1e308` used to store
    assert [m["body"] for m in r.history(b)["messages"]] == ["from an older agents-room"]
    rep = r.doctor()
    assert not rep["ok"] and rep["expiry_beyond_limit"] == 1 and any("30 days" in p for p in rep["problems"])
    assert r.doctor(fix=True)["fixed"]
    assert r.doctor()["expiry_beyond_limit"] == 0
    assert [m["body"] for m in r.recv(b)["messages"]] == ["from an older agents-room"]
    r.close()


COMMANDS = [
    ["who"], ["join", "--room", "x"], ["send", "--session", "s-00000000", "--to", "*", "hi"],
    ["recv", "--session", "s-00000000"], ["sent", "--session", "s-00000000"], ["history", "--session", "s-00000000"],
    ["leave", "--session", "s-00000000"], ["prune"], ["watch", "--timeout", "0.2"], ["doctor"], ["doctor", "--json"],
]
HOOK_EVENTS = ["SessionStart", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"]


def _broken_store(kind: str, db: Path, repos) -> None:
    if kind == "not-sqlite":
        db.write_bytes(b"this is not a database\n" * 100)
    elif kind == "truncated":
        r = Room.open(db)
        a = r.join(cwd=str(repos["api"]), rooms=["x"])["session"]
        for i in range(400):
            r.send(a, "*", f"message {i} " + "x" * 400)
        r.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        r.close()
        size = db.stat().st_size
        with open(db, "r+b") as fh:
            fh.truncate(size // 3)
    elif kind == "newer-schema":
        Room.open(db).close()
        c = sqlite3.connect(db)
        c.execute("PRAGMA user_version = 99")
        c.close()
    else:
        raise AssertionError(kind)


def _one_sentence(res, *words: str) -> None:
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    text = res.stderr if res.stderr.strip() else res.stdout
    assert "Traceback" not in res.stderr + res.stdout
    if text.lstrip().startswith("{"):  # doctor --json: the same sentence as its one problem
        rep = json.loads(text)
        assert rep["ok"] is False and len(rep["problems"]) == 1
        text = rep["problems"][0]
    assert len(text.strip().splitlines()) == 1, text
    for w in words:
        assert w in text, (w, text)


@pytest.mark.parametrize(
    "kind, says",
    [("not-sqlite", "not an SQLite database"), ("truncated", "damaged"), ("newer-schema", "newer than this agents-room")],
)
def test_finding_15_a_broken_store_is_one_sentence_and_exit_1_from_every_command(db, repos, kind, says):
    _broken_store(kind, db, repos)
    for cmd in COMMANDS:
        res = run_cli(*cmd, cwd=repos["api"])
        _one_sentence(res, says, str(db))
        if cmd[0] == "doctor":
            assert ("upgrade agents-room" if kind == "newer-schema" else f"mv {db}") in res.stdout
    payload = json.dumps({"session_id": "chat-1", "cwd": str(repos["api"]), "tool_name": "Edit",
                          "tool_input": {"file_path": "a.py"}})
    for event in HOOK_EVENTS:  # hooks fail open: exit 0, nothing on stdout or stderr
        res = run_cli("hook", f"--event={event}", input=payload)
        assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), (event, res.stderr)


def _as_other_user(args: list[str], db: Path, cwd: Path, src: Path) -> subprocess.CompletedProcess:
    """Run agents-room as an unprivileged user (root ignores file modes), with the system python,
    from `src`: a copy of the package that user can read (a checkout may sit in a 0700 folder)."""
    env = {"AGENTS_ROOM_DB": str(db), "HOME": str(db.parent), "PYTHONPATH": str(src), "PATH": os.environ["PATH"]}
    if os.geteuid() == 0:
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        py = shutil.which("python3", path="/usr/bin:/usr/local/bin") or sys.executable
    else:
        prefix, py = [], sys.executable
    return subprocess.run([*prefix, py, "-m", "agents_room", *args], capture_output=True, text=True, env=env,
                          cwd=str(cwd), timeout=30)


@pytest.mark.parametrize("kind", ["read-only", "unreadable"])
def test_finding_15_a_read_only_or_unreadable_store_is_one_sentence_and_exit_1(repos, kind):
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is needed to test file modes as root")
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="agents-room-ro-"))  # pytest's own tmp folder is 0700
    folder = tmp_path / "store"
    folder.mkdir()
    db = folder / "room.db"
    Room.open(db).close()
    for p in folder.iterdir():
        p.chmod(0o444 if kind == "read-only" else 0o000)
    folder.chmod(0o555)
    tmp_path.chmod(0o755)
    src = tmp_path / "src"
    shutil.copytree(Path(SRC) / "agents_room", src / "agents_room", ignore=shutil.ignore_patterns("__pycache__"))
    try:
        for cmd in COMMANDS:
            res = _as_other_user(cmd, db, tmp_path, src)
            _one_sentence(res, "read-only" if kind == "read-only" else "cannot be read", str(db))
        hook = subprocess.run(
            [*(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []),
             shutil.which("python3", path="/usr/bin:/usr/local/bin") if os.geteuid() == 0 else sys.executable,
             "-m", "agents_room", "hook", "--event=SessionStart"],
            input=json.dumps({"session_id": "c", "cwd": str(tmp_path)}), capture_output=True, text=True, timeout=30,
            env={"AGENTS_ROOM_DB": str(db), "HOME": str(folder), "PYTHONPATH": str(src), "PATH": os.environ["PATH"]},
        )
        assert (hook.returncode, hook.stdout, hook.stderr) == (0, "", "")
    finally:
        folder.chmod(0o755)
        shutil.rmtree(tmp_path, ignore_errors=True)
