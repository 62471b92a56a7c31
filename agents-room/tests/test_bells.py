"""Doorbells (issue 30, agents_room.bells): a headless run's hooks start Python only when there may be
something for them to do, and do exactly what they did before when there is."""

import json
import os
import stat
import time
from pathlib import Path

import pytest

from agents_room import bells
from agents_room.room import Room
from agents_room.store import immediate

from room_helpers import run_cli, run_hook_command


def _run(tmp_path, repos, *extra: str) -> tuple[dict, dict]:
    res = run_cli("run-config", "--harness=claude", f"--config-dir={tmp_path / 'run'}", f"--cwd={repos['web']}",
                  "--room=project-shop", "--label=agent", *extra, cwd=repos["web"])
    assert res.returncode == 0, res.stderr
    cfg = json.loads(res.stdout)
    return cfg, json.loads(Path(cfg["files"][1]).read_text())["hooks"]


def _hook(command: str, cfg: dict, payload: dict):
    """The hook as Claude Code runs it; PYTHONPROFILEIMPORTTIME makes any Python start show on stderr."""
    env = {**os.environ, **cfg["env"], "PYTHONPROFILEIMPORTTIME": "1"}
    return run_hook_command(command, json.dumps({"session_id": "chat-1", **payload}), env)


def _python_ran(res) -> bool:
    return "import time:" in res.stderr


def _context(res) -> str:
    return json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]


BASH = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}
STOP = {"hook_event_name": "Stop", "stop_hook_active": False}


def _commands(hooks: dict) -> dict:
    post = {g["matcher"]: g["hooks"][0]["command"] for g in hooks["PostToolUse"]}
    return {"post": post["*"], "reads": post["Read|Edit|Write|MultiEdit|NotebookEdit"],
            "stop": hooks["Stop"][0]["hooks"][0]["command"], "pre": hooks["PreToolUse"][0]["hooks"][0]["command"]}


def test_a_tool_call_with_nothing_due_starts_no_python(tmp_path, repos, db):
    cfg, hooks = _run(tmp_path, repos, "--platform-ends-session")
    cmd, sid = _commands(hooks), cfg["session"]
    bell = db.parent / "bells" / sid
    r = Room.open(db)
    r.conn.execute("UPDATE sessions SET last_seen=1 WHERE id=?", (sid,))
    edit = {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": {"file_path": str(repos["web"] / "a.py")}}
    for command, payload in ((cmd["post"], BASH), (cmd["stop"], STOP), (cmd["pre"], edit)):
        res = _hook(command, cfg, payload)
        assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), (command, res)
    assert not bell.exists()
    row = r.session_row(sid)
    assert row["harness_key"] is None and row["last_seen"] == 1  # the store was not even opened
    # (the check sees a Python start: the ungated group that records reads starts one)
    (repos["web"] / "a.py").write_text("x = 1\n")
    read = _hook(cmd["reads"], cfg, {"hook_event_name": "PostToolUse", "tool_name": "Read",
                                      "tool_input": {"file_path": str(repos["web"] / "a.py")}})
    assert read.returncode == 0 and read.stdout == "" and _python_ran(read)
    assert r.session_row(sid)["harness_key"] == "chat-1"
    r.close()


def test_a_message_rings_the_bell_and_the_next_tool_call_nudges(tmp_path, repos, db):
    cfg, hooks = _run(tmp_path, repos, "--platform-ends-session")
    cmd, sid = _commands(hooks), cfg["session"]
    bell = db.parent / "bells" / sid
    r = Room.open(db)
    person = r.join(cwd=str(repos["web"]), rooms=["project-shop"], label="person")["session"]
    r.send(person, "*", "the /orders API pages now")
    assert bell.exists()
    assert stat.S_IMODE(bell.stat().st_mode) == 0o600 and stat.S_IMODE(bell.parent.stat().st_mode) == 0o700
    for _ in range(2):  # offered on every tool call until it is read, as before
        res = _hook(cmd["post"], cfg, BASH)
        assert f"1 unread message for {sid}" in _context(res) and _python_ran(res)
        assert bell.exists()
    assert r.recv(sid)["messages"][0]["body"] == "the /orders API pages now"
    assert not bell.exists()  # read: nothing due any more
    res = _hook(cmd["post"], cfg, BASH)
    assert (res.stdout, res.stderr) == ("", "")
    # a direct message, and a reply in its thread, ring it too
    mid = r.send(person, sid, "one more")["message_id"]
    assert bell.exists()
    r.recv(sid)
    assert not bell.exists()
    r.send(person, None, "and a reply", reply_to=mid)
    assert bell.exists()
    r.close()


def test_stop_holds_when_mail_arrived_and_lets_the_next_stop_through(tmp_path, repos, db):
    cfg, hooks = _run(tmp_path, repos, "--platform-ends-session")
    cmd, sid = _commands(hooks), cfg["session"]
    bell = db.parent / "bells" / sid
    r = Room.open(db)
    person = r.join(cwd=str(repos["web"]), rooms=["project-shop"], label="person")["session"]
    r.send(person, "*", "wait, one thing")
    held = _hook(cmd["stop"], cfg, STOP)
    assert json.loads(held.stdout)["decision"] == "block"
    r.recv(sid)
    assert bell.exists()  # the hold is still to be let through at the next Stop
    through = _hook(cmd["stop"], cfg, STOP)
    assert through.stdout == "" and _python_ran(through)
    assert not bell.exists() and not r.session_row(sid)["stop_block_pending"]
    r.close()


def test_a_lease_expiry_notice_still_arrives(tmp_path, repos, db):
    cfg, hooks = _run(tmp_path, repos, "--platform-ends-session")
    cmd, sid = _commands(hooks), cfg["session"]
    bell = db.parent / "bells" / sid
    # a live lease keeps the bell rung: its expiry is due to be told
    live = Room.open(db)
    live.lease_acquire(sid, ["src/**"], ttl=600)
    assert bell.exists()
    res = _hook(cmd["post"], cfg, BASH)
    assert res.stdout == "" and _python_ran(res) and bell.exists()
    live.lease_release(sid)
    live.close()
    bell.unlink()
    # one that has expired (acquired "an hour ago" for a minute) is told at the next tool call
    past = Room.open(db, clock=lambda: time.time() - 3600)
    past.lease_acquire(sid, ["src/**"], ttl=60)
    past.close()
    assert bell.exists()
    res = _hook(cmd["post"], cfg, BASH)
    assert "1 unread message" in _context(res)
    r = Room.open(db)
    assert "expired" in r.recv(sid)["messages"][0]["body"]
    assert not bell.exists()
    r.close()


def test_reads_are_recorded_ungated_and_pre_tool_use_warns_as_before(tmp_path, repos, db):
    cfg, hooks = _run(tmp_path, repos, "--platform-ends-session")
    cmd, sid = _commands(hooks), cfg["session"]
    f = repos["web"] / "src" / "a.py"
    f.write_text("x = 1\n")
    read = {"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": str(f)}}
    edit = {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": {"file_path": str(f)}}
    assert _hook(cmd["reads"], cfg, read).returncode == 0  # (the first call binds the run's session too)
    assert (db.parent / "bells" / f"{sid}.read").exists()
    # a Python start per Read: neither sqlite3's date adapters nor OpenSSL for a small file
    res = _hook(cmd["reads"], cfg, read)
    assert res.returncode == 0 and res.stdout == ""
    imported = {line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")}
    assert "agents_room.room" in imported, sorted(imported)
    assert not imported & {"datetime", "sqlite3.dbapi2", "hashlib", "_hashlib"}, sorted(imported)
    res = _hook(cmd["pre"], cfg, edit)
    assert res.stdout == "" and _python_ran(res)
    f.write_text("x = 2\n")  # changed by someone else
    assert "changed since you read it" in _context(_hook(cmd["pre"], cfg, edit))
    # its own edit is recorded (the edit tools are in the ungated group): no warning after it
    assert _hook(cmd["reads"], cfg, {**read, "tool_name": "Edit"}).returncode == 0
    assert _hook(cmd["pre"], cfg, edit).stdout == ""
    # a run that has read nothing is warned of another session's lease, and only while there is one
    other_cfg, other_hooks = _run(tmp_path / "b", repos, "--platform-ends-session")
    pre = _commands(other_hooks)["pre"]
    r = Room.open(db)
    person = r.join(cwd=str(repos["web"]), rooms=["project-shop"], label="person")["session"]
    r.lease_acquire(person, ["src/**"], ttl=600)
    assert "under an exclusive lease" in _context(_hook(pre, other_cfg, edit))
    r.lease_release(person)
    res = _hook(pre, other_cfg, edit)
    assert res.stdout == "" and _python_ran(res)  # it found none live and silenced .leases
    assert not (db.parent / "bells" / ".leases").exists()
    res = _hook(pre, other_cfg, edit)
    assert (res.stdout, res.stderr) == ("", "")
    r.close()


def test_a_run_in_its_own_checkout_records_no_reads_and_still_hears_of_leases(tmp_path, repos, db):
    """`run-config --own-checkout`: the folder is the run's own, so only the agent changes its files
    (Claude Code's own edit check catches that); no hook records what it reads or writes — no
    Python start at a Read, Edit or Write (~19 ms of CPU each) — and its PreToolUse still warns of a
    lease. A run in a shared folder (no flag) records them as before."""
    cfg, hooks = _run(tmp_path, repos, "--platform-ends-session", "--own-checkout")
    assert cfg["records_reads"] is False
    assert [g["matcher"] for g in hooks["PostToolUse"]] == ["*"]
    assert all("--reads-only" not in h["command"] for g in hooks["PostToolUse"] for h in g["hooks"])
    shared, shared_hooks = _run(tmp_path / "shared", repos, "--platform-ends-session")
    assert shared["records_reads"] is True and "--reads-only" in _commands(shared_hooks)["reads"]
    f = repos["web"] / "src" / "a.py"
    f.write_text("x = 1\n")
    edit = {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": {"file_path": str(f)}}
    pre = hooks["PreToolUse"][0]["hooks"][0]["command"]
    res = _hook(pre, cfg, edit)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")  # nothing read, no lease: no Python
    r = Room.open(db)
    person = r.join(cwd=str(repos["web"]), rooms=["project-shop"], label="person")["session"]
    r.lease_acquire(person, ["src/**"], ttl=600)
    assert "under an exclusive lease" in _context(_hook(pre, cfg, edit))
    r.close()


def test_a_platform_ended_session_is_anchored_to_the_platform(tmp_path, repos, db):
    cfg, hooks = _run(tmp_path, repos, "--platform-ends-session")
    sid = cfg["session"]
    r = Room.open(db)
    me = next(s for s in r.who()["sessions"] if s["session"] == sid)
    assert me["pid"] == os.getpid() and me["state"] == "live"  # run-config's caller: the platform
    person = r.join(cwd=str(repos["web"]), rooms=["project-shop"], label="person")["session"]
    r.send(person, sid, "hi")
    assert "1 unread" in _context(_hook(_commands(hooks)["post"], cfg, BASH))
    row = r.session_row(sid)
    assert row["harness_key"] == "chat-1" and row["pid"] == os.getpid()  # bound to the chat, pid kept
    # without the platform ending it, the first hook that starts Python binds the harness's pid, as before
    plain, plain_hooks = _run(tmp_path / "p", repos)
    assert r.session_row(plain["session"])["pid"] is None
    r.send(person, plain["session"], "hi")
    _hook(_commands(plain_hooks)["post"], plain, {**BASH, "session_id": "chat-2"})
    assert r.session_row(plain["session"])["pid"] == os.getpid()
    r.close()


# ----------------------------------------------------------------- every path that rings


@pytest.fixture
def trio(room, repos):
    a = room.join(cwd=str(repos["web"]), rooms=["p"], label="a", tags=["front"])["session"]
    b = room.join(cwd=str(repos["web"]), rooms=["p"], label="b", tags=["back"])["session"]
    return room, a, b


def _bells(room) -> Path:
    return Path(room.bell_folder())


def _quiet(room) -> None:
    folder = _bells(room)
    for p in folder.glob("*") if folder.exists() else []:
        p.unlink()
    for p in folder.glob(".*") if folder.exists() else []:
        p.unlink()


@pytest.mark.parametrize("how", ["session", "all", "tag", "file", "reply"])
def test_every_kind_of_send_rings_each_recipient(trio, how):
    room, a, b = trio
    room.lease_acquire(b, ["src/**"], ttl=600)
    first = room.send(b, a, "first")["message_id"]
    _quiet(room)
    to = {"session": b, "all": "*", "tag": "tag:back", "file": "file:src/x.py", "reply": None}[how]
    room.send(a, to, "hello", reply_to=first if how == "reply" else None)
    assert (_bells(room) / b).exists()


def test_notices_and_holds_ring(trio, clock, repos):
    room, a, b = trio
    folder = _bells(room)
    # a lease taken over (expired) tells its holder
    room.lease_acquire(b, ["src/**"], ttl=60)
    assert (folder / b).exists() and (folder / ".leases").exists()
    clock.advance(120)
    _quiet(room)
    room.lease_acquire(a, ["src/**"], ttl=600)
    assert (folder / b).exists()
    # a lease released by a person tells its holder
    _quiet(room)
    lease = room.lease_list()["leases"][0]["lease_id"]
    room.lease_force_release([lease])
    assert (folder / a).exists()
    # an expiry told when its holder next asks anything (here: unread)
    room.lease_acquire(a, ["docs/**"], ttl=60)
    room.recv(a)
    clock.advance(120)
    _quiet(room)
    room.unread(a)
    assert (folder / a).exists()
    # a renewal re-arms the expiry notice
    _quiet(room)
    room.lease_renew(a, ttl=600)
    assert (folder / a).exists() and (folder / ".leases").exists()
    # a Stop hold, and a wake waiter, are for its next hooks to let through / stand down
    room.recv(b)
    room.conn.execute("UPDATE sessions SET autonomy=1 WHERE id=?", (b,))
    room.send(a, b, "x")
    room.recv(b, peek=True)
    _quiet(room)
    assert room.stop_check(b, harness="claude") is not None
    assert (folder / b).exists()
    _quiet(room)
    room.wake_register(a)
    assert (folder / a).exists()


def test_doctor_moving_unread_mail_rings_its_new_owner(room, repos):

    from agents_room import liveness

    pid = os.getpid()
    keep = room.join(cwd=str(repos["web"]), harness="claude", harness_key="k", label="x")["session"]
    old = room.join(cwd=str(repos["web"]), harness="claude", harness_key="k2", label="y")["session"]
    start = liveness.proc_start(pid)
    room.conn.execute("UPDATE sessions SET pid=?, pid_start=?, harness_key='k', last_seen=1 WHERE id IN (?,?)",
                      (pid, start, keep, old))
    room.conn.execute("UPDATE sessions SET last_seen=2 WHERE id=?", (keep,))
    sender = room.join(cwd=str(repos["web"]), label="s")["session"]
    room.send(sender, old, "for the duplicate")
    _quiet(room)
    assert room.doctor(fix=True)["duplicate_chats"]
    assert (_bells(room) / keep).exists()


def test_a_bell_rings_only_once_its_transaction_commits(trio):
    room, a, b = trio
    _quiet(room)
    with immediate(room.conn):
        room.notice(b, "x")
        assert not (_bells(room) / b).exists()
    assert (_bells(room) / b).exists()
    _quiet(room)
    with pytest.raises(RuntimeError):
        with immediate(room.conn):
            room.notice(b, "y")
            raise RuntimeError
    assert not (_bells(room) / b).exists()  # rolled back: nothing to announce


def test_a_bell_is_silenced_only_when_nothing_is_due(trio, clock):
    room, a, b = trio
    folder = _bells(room)

    def settled() -> bool:
        bells.ring(str(folder), b)
        bells.settle_bell(room, b)
        return not (folder / b).exists()

    room.send(a, b, "x")
    assert not settled()  # stored
    room.pending(b, "tool")
    assert not settled()  # offered, unread
    room.recv(b)
    assert settled()
    room.lease_acquire(b, ["src/**"], ttl=60)
    assert not settled()  # not yet told of its expiry
    room.lease_release(b)
    assert settled()
    room.conn.execute("UPDATE sessions SET stop_block_pending=1 WHERE id=?", (b,))
    assert not settled()
    room.conn.execute("UPDATE sessions SET stop_block_pending=0, wake_waiter='t' WHERE id=?", (b,))
    assert not settled()
    room.conn.execute("UPDATE sessions SET wake_waiter=NULL WHERE id=?", (b,))
    assert settled()
    # prune takes the bells of sessions no longer in the store
    bells.ring(str(folder), "s-gone0000")
    bells.ring(str(folder), "s-gone0000.read")
    room.prune()
    assert not (folder / "s-gone0000").exists() and not (folder / "s-gone0000.read").exists()


def test_doctor_does_not_take_a_platforms_runs_for_one_chat(tmp_path, repos, db):
    """Runs anchored to the one platform process (run-config --platform-ends-session) share its pid:
    they are not duplicate rows of one chat, which doctor --fix would collapse."""
    first, _ = _run(tmp_path / "1", repos, "--platform-ends-session")
    second, _ = _run(tmp_path / "2", repos, "--platform-ends-session")
    r = Room.open(db)
    assert r.session_row(first["session"])["pid"] == r.session_row(second["session"])["pid"] == os.getpid()
    report = r.doctor(fix=True)
    assert report["duplicate_chats"] == [] and r.session_row(first["session"])["ended_at"] is None
    r.close()


def test_a_run_whose_bells_cannot_ring_keeps_its_hooks_ungated(tmp_path, repos, db):
    db.parent.mkdir(parents=True, exist_ok=True)
    (db.parent / "bells").write_text("not a folder")
    cfg, hooks = _run(tmp_path, repos, "--platform-ends-session")
    commands = [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]
    assert cfg["session"] and not any("[ -e" in c for c in commands)
    assert len(hooks["PostToolUse"]) == 1  # as before: one group, every tool
