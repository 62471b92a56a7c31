"""R-ROOM-10: hooks per harness — golden outputs, the Stop loop guard, the Codex cap, wake, fail-open."""

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from agents_room.room import WAKE, Room

from room_helpers import PY, run_cli

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def payload(harness: str, event: str, cwd: Path, **extra) -> dict:
    if harness == "claude":
        p = {"session_id": "0b9e6a1c-claude-chat", "transcript_path": "/tmp/t.jsonl", "cwd": str(cwd),
             "permission_mode": "default", "hook_event_name": event}
        if event == "SessionStart":
            p["source"] = "startup"
        if event in ("PreToolUse", "PostToolUse"):
            p.update(tool_name="Edit", tool_input={"file_path": str(cwd / "src" / "app.py"), "old_string": "a", "new_string": "b"})
            if event == "PostToolUse":
                p["tool_response"] = {"success": True}
        if event == "Stop":
            p["stop_hook_active"] = False
        if event == "SessionEnd":
            p["reason"] = "prompt_input_exit"
    else:
        p = {"session_id": "019a-codex-thread", "transcript_path": None, "cwd": str(cwd), "hook_event_name": event,
             "model": "gpt-5-codex", "permission_mode": "default"}
        if event == "SessionStart":
            p["source"] = "startup"
        if event in ("PreToolUse", "PostToolUse"):
            p.update(turn_id="turn-1", tool_name="apply_patch", tool_use_id="call_1",
                     tool_input={"command": "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** End Patch\n"})
            if event == "PostToolUse":
                p["tool_response"] = "Success. Updated the following files:\nM src/app.py"
        if event == "Stop":
            p.update(turn_id="turn-1", stop_hook_active=False, last_assistant_message="done")
    p.update(extra)
    return p


def hook(harness, event, data, *args, timeout=20):
    return run_cli("hook", f"--event={event}", f"--harness={harness}", *args, input=json.dumps(data), timeout=timeout)


def normalise(text: str, ids: dict[str, str]) -> str:
    for name, sid in ids.items():
        text = text.replace(sid, f"<{name}>")
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<TIME>", text)


@pytest.fixture
def scene(db, repos):
    """A repo with app.py, another chat in the same repo and a shared room holding a lease on app.py."""
    (repos["api"] / "src" / "app.py").write_text("a\n")
    r = Room.open(db)
    other = r.join(cwd=str(repos["api"]), rooms=["storefront"], label="peer")["session"]
    r.lease_acquire(other, ["src/app.py"], ttl=600)
    r.close()
    return {"cwd": repos["api"], "other": other}


@pytest.mark.parametrize("harness", ["claude", "codex"])
@pytest.mark.parametrize("event", ["SessionStart", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"])
def test_golden_output(harness, event, scene, db):
    cwd = scene["cwd"]
    start = hook(harness, "SessionStart", payload(harness, "SessionStart", cwd), "--autonomy=hold", "--room=storefront",
                 "--label=agent")
    assert start.returncode == 0
    r = Room.open(db)
    me = r.conn.execute("SELECT id FROM sessions WHERE harness=?", (harness,)).fetchone()[0]
    ids = {"SID": me, "PEER": scene["other"]}
    if event in ("PostToolUse", "Stop"):
        r.send(scene["other"], me, "please look at the API change")
    if event == "PreToolUse":
        # this chat read app.py, then the peer changed it
        r.file_read(me, "src/app.py")
        (cwd / "src" / "app.py").write_text("changed by peer\n")
        r.file_read(scene["other"], "src/app.py")
    r.close()
    res = start if event == "SessionStart" else hook(harness, event, payload(harness, event, cwd))
    assert res.returncode == 0 and res.stderr == ""
    got = {"exit": res.returncode, "stdout": json.loads(res.stdout) if res.stdout.strip() else None}
    text = normalise(json.dumps(got, indent=2, sort_keys=True), ids) + "\n"
    path = GOLDEN / f"{harness}_{event}.json"
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"missing golden {path.name}: run with UPDATE_GOLDEN=1 once and review it"
    assert text == path.read_text()
    out = got["stdout"]
    if event in ("SessionStart", "PreToolUse", "PostToolUse"):
        assert set(out) == {"hookSpecificOutput"}
        assert out["hookSpecificOutput"]["hookEventName"] == event
        assert out["hookSpecificOutput"]["additionalContext"].startswith("agents-room:")
    elif event == "Stop":
        assert out["decision"] == "block" and "msg_recv" in out["reason"]
    else:
        assert out is None


def _start(harness, cwd, autonomy="hold", key=None):
    p = payload(harness, "SessionStart", cwd)
    if key:
        p["session_id"] = key
    res = hook(harness, "SessionStart", p, f"--autonomy={autonomy}", "--room=s")
    assert res.returncode == 0
    return re.search(r"you are session (s-[0-9a-f]+)", res.stdout).group(1)


def _peer(db, cwd):
    r = Room.open(db)
    sid = r.join(cwd=str(cwd), rooms=["s"], label="peer")["session"]
    return r, sid


def test_claude_stop_never_blocks_twice_in_a_turn(db, repos):
    me = _start("claude", repos["api"])
    r, peer = _peer(db, repos["web"])
    r.send(peer, me, "one")
    stop = payload("claude", "Stop", repos["api"])
    first = hook("claude", "Stop", stop)
    assert json.loads(first.stdout)["decision"] == "block"
    # the continuation: Claude sets stop_hook_active, and a new message arrived meanwhile
    r.send(peer, me, "two")
    again = hook("claude", "Stop", dict(stop, stop_hook_active=True))
    assert again.stdout == ""
    # even if the harness forgot stop_hook_active, the Stop right after a block goes through
    r.send(peer, me, "three")
    b2 = hook("claude", "Stop", stop)
    assert json.loads(b2.stdout)["decision"] == "block"  # a new turn: holds again
    forgot = hook("claude", "Stop", stop)  # same turn, flag missing
    assert forgot.returncode == 0 and forgot.stdout == ""


def test_stop_retry_window_does_not_rehold_offered_message(db, repos):
    me = _start("claude", repos["api"])
    r, peer = _peer(db, repos["web"])
    r.send(peer, me, "one")
    post = hook("claude", "PostToolUse", payload("claude", "PostToolUse", repos["api"], tool_name="Bash", tool_input={"command": "ls"}))
    assert "1 unread message" in post.stdout  # offered on the tool event
    post2 = hook("claude", "PostToolUse", payload("claude", "PostToolUse", repos["api"], tool_name="Bash", tool_input={"command": "ls"}))
    assert "1 unread message" in post2.stdout  # and again: retry window 0 on tool events
    stop = hook("claude", "Stop", payload("claude", "Stop", repos["api"]))
    assert stop.stdout == ""  # offered less than 30 minutes ago: Stop does not start another turn for it


def test_notify_never_blocks(db, repos):
    me = _start("claude", repos["api"], autonomy="notify")
    r, peer = _peer(db, repos["web"])
    r.send(peer, me, "x")
    assert hook("claude", "Stop", payload("claude", "Stop", repos["api"])).stdout == ""


def test_codex_turn_guard_and_cap(db, repos):
    me = _start("codex", repos["api"])
    r, peer = _peer(db, repos["web"])
    blocks = 0
    for turn in range(4):
        r.send(peer, me, f"m{turn}")
        st = payload("codex", "Stop", repos["api"], turn_id=f"turn-{turn}")
        res = hook("codex", "Stop", st)
        if res.stdout:
            blocks += 1
            assert json.loads(res.stdout)["decision"] == "block"
            # never twice in one turn, even if Codex does not set stop_hook_active
            r.send(peer, me, "more")
            assert hook("codex", "Stop", st).stdout == ""
            assert hook("codex", "Stop", st).stdout == ""
    assert blocks == 3  # our own cap for Codex: 3 holds per rolling hour


def test_post_tool_use_records_reads_and_writes_for_divergence(db, repos):
    f = repos["api"] / "src" / "app.py"
    f.write_text("v1\n")
    me = _start("claude", repos["api"])
    r, _ = _peer(db, repos["web"])
    other = r.join(cwd=str(repos["api"]), label="other")["session"]
    r.file_read(other, "src/app.py")
    read = payload("claude", "PostToolUse", repos["api"], tool_name="Read", tool_input={"file_path": str(f)})
    hook("claude", "PostToolUse", read)
    f.write_text("v2\n")
    hook("claude", "PostToolUse", payload("claude", "PostToolUse", repos["api"]))  # Edit of app.py
    res = r.file_check(other, ["src/app.py"])
    assert res["files"][0]["changed_by"] == me


def test_codex_apply_patch_paths_are_tracked(db, repos):
    f = repos["api"] / "src" / "app.py"
    f.write_text("x\n")
    me = _start("codex", repos["api"])
    hook("codex", "PostToolUse", payload("codex", "PostToolUse", repos["api"]))
    r = Room.open(db)
    assert r.conn.execute("SELECT path FROM reads WHERE session_id=?", (me,)).fetchone()[0] == "src/app.py"


def test_tool_event_without_session_start_joins_and_introduces(db, repos):
    res = hook("claude", "PostToolUse", payload("claude", "PostToolUse", repos["api"], tool_name="Bash", tool_input={}))
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "you are session s-" in ctx


def test_resume_rejoins_same_session_and_never_lowers(db, repos):
    me = _start("claude", repos["api"], autonomy="wake")
    again = _start("claude", repos["api"], autonomy="notify")
    assert again == me
    r = Room.open(db)
    assert r.session_row(me)["autonomy"] == WAKE


def test_session_end_releases_leases_and_keeps_mail(db, repos):
    me = _start("claude", repos["api"])
    r, peer = _peer(db, repos["web"])
    r.lease_acquire(me, ["src/**"])
    r.send(peer, me, "kept")
    assert hook("claude", "SessionEnd", payload("claude", "SessionEnd", repos["api"])).stdout == ""
    assert r.conn.execute("SELECT count(*) FROM leases").fetchone()[0] == 0
    assert _start("claude", repos["api"]) == me
    assert r.unread(me)["unread"] == 1


@pytest.mark.parametrize("stdin", ["not json", "[1,2]", ""])
def test_fails_open_on_bad_input(stdin):
    res = run_cli("hook", "--event=Stop", input=stdin)
    assert res.returncode == 0 and res.stdout == "" and res.stderr == ""


def test_fails_open_on_broken_store(tmp_path, repos):
    bad = tmp_path / "broken.db"
    bad.write_text("this is not a database" * 100)
    for event in ("SessionStart", "PostToolUse", "Stop"):
        res = run_cli("hook", f"--event={event}", input=json.dumps(payload("claude", event, repos["api"])),
                      env={"AGENTS_ROOM_DB": str(bad)})
        assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    res = run_cli("hook", "--event=SessionStart", input=json.dumps(payload("claude", "SessionStart", repos["api"])),
                  env={"AGENTS_ROOM_DB": "/proc/no/such/dir/room.db"})
    assert (res.returncode, res.stdout) == (0, "")


def test_pre_tool_use_non_edit_is_silent_and_cheap(repos, db):
    res = hook("claude", "PreToolUse", payload("claude", "PreToolUse", repos["api"], tool_name="Bash", tool_input={"command": "ls"}))
    assert res.stdout == "" and not db.exists()  # did not even open the store


def test_wake_waits_idle_and_wakes_on_message(db, repos):
    me = _start("claude", repos["api"], autonomy="wake")
    r, peer = _peer(db, repos["web"])
    p = subprocess.Popen(
        [PY, "-m", "agents_room", "hook", "--event=Stop", "--harness=claude", "--wake", "--wake-interval=0.05",
         "--wake-timeout=20"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    p.stdin.write(json.dumps(payload("claude", "Stop", repos["api"])))
    p.stdin.close()
    deadline = time.monotonic() + 20
    while r.session_row(me)["wake_waiter"] is None:  # idle: the waiter has registered and waits
        assert time.monotonic() < deadline and p.poll() is None, "the wake waiter never registered"
        time.sleep(0.02)
    assert p.poll() is None
    r.send(peer, me, "wake up")
    p.wait(timeout=20)
    err = p.stderr.read()
    assert p.returncode == 2 and "1 unread message" in err and "via shared:s" in err


def test_wake_stands_down_when_chat_is_busy_or_below_wake(db, repos):
    me = _start("claude", repos["api"], autonomy="wake")
    p = subprocess.Popen(
        [PY, "-m", "agents_room", "hook", "--event=Stop", "--harness=claude", "--wake", "--wake-interval=0.05",
         "--wake-timeout=20"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    p.stdin.write(json.dumps(payload("claude", "Stop", repos["api"])))
    p.stdin.close()
    r = Room.open(db)
    deadline = time.monotonic() + 20
    while r.session_row(me)["wake_waiter"] is None:  # the waiter has registered: the chat is idle
        assert time.monotonic() < deadline and p.poll() is None, "the wake waiter never registered"
        time.sleep(0.02)
    hook("claude", "PostToolUse", payload("claude", "PostToolUse", repos["api"], tool_name="Bash", tool_input={}))
    began = time.monotonic()
    p.wait(timeout=20)
    # it stood down because the chat got busy, not because its 20 s timeout ran out (issue 10, item 8)
    assert p.returncode == 0 and time.monotonic() - began < 5.0
    assert r.session_row(me)["wake_waiter"] is None
    r.close()
    _start("claude", repos["api"], autonomy="hold", key="another-chat")
    began = time.monotonic()
    res = hook("claude", "Stop", payload("claude", "Stop", repos["api"], session_id="another-chat"), "--wake",
               "--wake-timeout=20")
    assert res.returncode == 0 and time.monotonic() - began < 5.0  # hold: the wake waiter exits at once


async def test_mcp_join_from_the_same_chat_finds_the_hook_session(db, repos):
    """SessionStart (hook) and room_join (MCP) from one harness process are one session."""
    from mcp import Client, StdioServerParameters

    me = _start("claude", repos["api"], autonomy="wake")
    # the hook ran as a child of this test process, and so does this server: same harness pid
    params = StdioServerParameters(command=PY, args=["-m", "agents_room", "mcp"], env={"AGENTS_ROOM_DB": str(db)},
                                   cwd=str(repos["api"]))
    async with Client(params, read_timeout_seconds=30) as c:
        res = await c.call_tool("room_join", {"rooms": ["extra"]})  # no session, no autonomy, no harness
        got = res.structured_content
    assert got["session"] == me and got["autonomy"] == "wake" and "shared:extra" in got["rooms"]


def test_wake_reminds_of_a_message_offered_long_ago(db, repos):
    me = _start("claude", repos["api"], autonomy="wake")
    r, peer = _peer(db, repos["web"])
    r.send(peer, me, "ignored once")
    r.pending(me, "tool")  # offered, not read
    r.conn.execute("UPDATE deliveries SET offered_at = offered_at - 31*60 WHERE recipient=?", (me,))
    res = hook("claude", "Stop", payload("claude", "Stop", repos["api"]), "--wake", "--wake-interval=0.05",
               "--wake-timeout=5")
    assert res.returncode == 2 and "ignored" not in res.stdout and "1 unread message" in res.stderr


def test_session_start_clears_a_stop_hold_flag_left_by_an_earlier_turn(db, repos):
    me = _start("claude", repos["api"])
    r, peer = _peer(db, repos["web"])
    r.send(peer, me, "one")
    stop = payload("claude", "Stop", repos["api"])
    assert json.loads(hook("claude", "Stop", stop).stdout)["decision"] == "block"
    # the held turn is never finished (the chat is closed); the chat is resumed
    assert _start("claude", repos["api"]) == me
    r.send(peer, me, "two")
    assert json.loads(hook("claude", "Stop", stop).stdout)["decision"] == "block"


def test_wake_reminds_of_an_offer_dated_in_the_future(db, repos):
    # the clock stepped back after the offer: pending() re-offers it, and so must the wake waiter
    me = _start("claude", repos["api"], autonomy="wake")
    r, peer = _peer(db, repos["web"])
    r.send(peer, me, "offered before the clock went back")
    r.pending(me, "tool")
    r.conn.execute("UPDATE deliveries SET offered_at = offered_at + 3600 WHERE recipient=?", (me,))
    res = hook("claude", "Stop", payload("claude", "Stop", repos["api"]), "--wake", "--wake-interval=0.05",
               "--wake-timeout=1.5")
    assert res.returncode == 2 and "1 unread message" in res.stderr


def test_wake_sleeps_on_the_store_and_wakes_when_a_message_is_written(db, repos):
    """Issue 30: the wake waiter sleeps until the store changes, not a look every second; with a
    30 s longest sleep it still wakes at once on a message (a write to the store)."""
    me = _start("claude", repos["api"], autonomy="wake")
    r, peer = _peer(db, repos["web"])
    p = subprocess.Popen(
        [PY, "-m", "agents_room", "hook", "--event=Stop", "--harness=claude", "--wake", "--wake-interval=30",
         "--wake-timeout=60"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    p.stdin.write(json.dumps(payload("claude", "Stop", repos["api"])))
    p.stdin.close()
    deadline = time.monotonic() + 20
    while r.session_row(me)["wake_waiter"] is None:
        assert time.monotonic() < deadline and p.poll() is None, "the wake waiter never registered"
        time.sleep(0.02)
    time.sleep(0.5)  # (past its first look: it now sleeps)
    began = time.monotonic()
    r.send(peer, me, "wake up")
    p.wait(timeout=40)
    assert p.returncode == 2 and "1 unread message" in p.stderr.read()
    assert time.monotonic() - began < 10  # a look every 30 s would have taken up to 30


def test_an_unwatched_store_is_asked_every_second_whatever_the_longest_sleep(db, repos, monkeypatch):
    """Without a watch (no inotify, or the user's 128 inotify instances all taken — as under a
    full test run), nothing wakes the waiter's sleep early: it asks the store every second, not
    every `--wake-interval` (a message had waited 30 s for it)."""
    import threading

    from agents_room import hooks, storewatch

    monkeypatch.setattr(storewatch.StoreWatch, "__init__", lambda self, db_path: setattr(self, "fd", None))
    sleeping, sleep = threading.Event(), storewatch.StoreWatch.wait

    def wait_told(self, timeout: float) -> bool:
        sleeping.set()  # (past its first look: the message comes while it sleeps)
        return sleep(self, timeout)

    monkeypatch.setattr(storewatch.StoreWatch, "wait", wait_told)
    me = _start("claude", repos["api"], autonomy="wake")
    r, peer = _peer(db, repos["web"])
    answer: list = []

    def wait() -> None:
        room = Room.open(db)
        try:
            answer.append(hooks._wake(room, room.session_row(me), {"wake_interval": 30, "wake_timeout": 60}))
        finally:
            room.close()

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    assert sleeping.wait(20), "the wake waiter never slept"
    began = time.monotonic()
    r.send(peer, me, "wake up")
    waiter.join(40)
    assert answer and answer[0][1] == 2 and "1 unread message" in answer[0][2]
    assert time.monotonic() - began < 10  # asked every 30 s, it would have taken up to 30


def test_store_watch_returns_on_a_write_and_sleeps_otherwise(tmp_path):
    import sqlite3

    from agents_room.storewatch import StoreWatch

    store = tmp_path / "room.db"
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    watch = StoreWatch(str(store))
    try:
        if not watch.watching:
            pytest.skip("no inotify here: the wake waiter sleeps its interval, as before")
        while watch.wait(0.2):  # (what the set-up wrote)
            pass
        began = time.monotonic()
        assert watch.wait(0.5) is False and time.monotonic() - began >= 0.45
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()
        began = time.monotonic()
        assert watch.wait(10) is True and time.monotonic() - began < 2
    finally:
        watch.close()
        conn.close()
