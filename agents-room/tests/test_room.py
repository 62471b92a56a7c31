"""Room semantics through the in-process API (the MCP tools are thin wrappers over it)."""

import os

import pytest

from agents_room import liveness
from agents_room.room import HOLD, NOTIFY, WAKE, RoomError


def join(room, repo, **kw):
    return room.join(cwd=str(repo), **kw)


# ---- rooms (R-ROOM-3) ----------------------------------------------------------------

def test_repo_room_from_remote_or_top_level_and_prefix_normalised(room, repos):
    a = join(room, repos["api"] / "src", rooms=["storefront"])
    b = join(room, repos["web"], rooms=["shared:storefront"])
    c = join(room, repos["cli"], rooms=["#storefront"])
    assert a["repo"] == "repo:api" and b["repo"] == "repo:web" and c["repo"] == "repo:cli"
    assert a["rooms"] == ["repo:api", "shared:storefront"]
    assert {o["session"] for o in c["others"]} == {a["session"], b["session"]}
    assert room.conn.execute("SELECT count(*) FROM rooms WHERE name LIKE '%storefront'").fetchone()[0] == 1


def test_invalid_room_name(room, repos):
    with pytest.raises(RoomError, match="invalid room name"):
        join(room, repos["api"], rooms=["two words"])


def test_not_in_git_repo_is_said(room, tmp_path):
    res = room.join(cwd=str(tmp_path), rooms=["x"])
    assert res["rooms"] == ["shared:x"]
    assert any("not inside a git repository" in w for w in res["warnings"])


# ---- identity (R-ROOM-11) --------------------------------------------------------------

def test_unknown_session_names_the_likely_id(room, repos):
    a = join(room, repos["api"], label="api-agent")
    typo = a["session"][:-1] + ("0" if a["session"][-1] != "0" else "1")
    with pytest.raises(RoomError) as e:
        room.recv(typo)
    assert a["session"] in str(e.value) and "did you mean" in str(e.value)


def test_harness_key_is_not_a_session_id(room, repos):
    a = room.join(cwd=str(repos["api"]), harness="claude", harness_key="6f1c2d9e-1111-2222-3333-444455556666")
    with pytest.raises(RoomError) as e:
        room.recv("6f1c2d9e-1111-2222-3333-444455556666")
    assert "harness" in str(e.value) and a["session"] in str(e.value)


def test_tools_deriving_a_room_refuse_unknown_session(room, repos, monkeypatch):
    join(room, repos["api"])
    monkeypatch.chdir(repos["api"])  # would be the fallback room if we fell back to cwd
    for fn in (lambda: room.history("s-nope"), lambda: room.send("s-nope", "*", "x"),
               lambda: room.lease_acquire("s-nope", ["a"]), lambda: room.who(session="s-nope")):
        with pytest.raises(RoomError, match="unknown session id"):
            fn()
    assert room.conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 0


# ---- autonomy (R-ROOM-9) ------------------------------------------------------------

def test_rejoin_without_autonomy_keeps_it_and_lowering_warns(room, repos):
    a = join(room, repos["api"], autonomy=WAKE)
    sid = a["session"]
    again = room.join(session=sid, rooms=["extra"], cwd=str(repos["api"]))  # autonomy not given
    assert again["autonomy"] == "wake" and not again["warnings"]
    raised = room.join(session=sid, autonomy="wake", cwd=str(repos["api"]))
    assert raised["autonomy"] == "wake"
    lowered = room.join(session=sid, autonomy=NOTIFY, cwd=str(repos["api"]))
    assert lowered["autonomy"] == "notify"
    assert any("lowered from wake to notify" in w for w in lowered["warnings"])
    # hooks re-running on resume only raise
    keep = room.join(session=sid, autonomy=NOTIFY, cwd=str(repos["api"]), raise_only=True)
    assert keep["autonomy"] == "notify" and not keep["warnings"]
    up = room.join(session=sid, autonomy=HOLD, cwd=str(repos["api"]), raise_only=True)
    assert up["autonomy"] == "hold"


def test_bad_autonomy(room, repos):
    with pytest.raises(RoomError):
        join(room, repos["api"], autonomy=7)


# ---- addressing (R-ROOM-7) -------------------------------------------------------------

def test_selectors_and_recipient_counts(room, repos):
    a = join(room, repos["api"], rooms=["storefront"], tags=["backend"])
    b = join(room, repos["web"], rooms=["storefront"], tags=["frontend"])
    c = join(room, repos["cli"], rooms=["storefront"], tags=["frontend"])
    A, B, C = a["session"], b["session"], c["session"]
    assert room.send(A, "*", "all")["recipients"] == 2
    assert room.send(A, "tag:frontend", "fe")["recipient_ids"] == sorted([B, C])
    assert room.send(A, B, "direct")["recipient_ids"] == [B]
    room.lease_acquire(B, ["src/app/*.ts"])
    res = room.send(A, "file:repo:web/src/app/main.ts", "your file")
    assert res["recipient_ids"] == [B]
    same_repo = room.send(A, "file:src/app/main.ts", "in my repo")
    assert same_repo["recipients"] == 0 and "repo:web" in same_repo["note"]
    zero = room.send(A, "tag:nobody", "hello?")
    assert zero["recipients"] == 0 and "0 recipients" in zero["note"]
    # zero recipients is stored, and the count shows in history and sent
    hist = room.history(B, "storefront")["messages"]
    assert [m["recipients"] for m in hist if m["body"] == "hello?"] == [0]
    assert room.sent(A)["messages"][0]["recipients"] == 0


def test_alone_in_room_broadcast_is_stored_with_zero(room, repos):
    a = join(room, repos["api"], rooms=["solo"])
    res = room.send(a["session"], "*", "anyone?")
    assert res["recipients"] == 0 and "nobody else" in res["note"]


def test_file_selector_only_lease_holder_is_me(room, repos):
    a = join(room, repos["api"])
    join(room, repos["api"])
    room.lease_acquire(a["session"], ["src/x.py"])
    res = room.send(a["session"], "file:src/*.py", "x")
    assert res["recipients"] == 0 and "only you hold one" in res["note"]


def test_message_belongs_to_every_sender_room(room, repos):
    a = join(room, repos["api"], rooms=["storefront", "payments"])
    b = join(room, repos["web"], rooms=["payments"])
    room.send(a["session"], b["session"], "direct but logged")
    for r in ("repo:api", "shared:storefront", "shared:payments"):
        assert [m["body"] for m in room.history(a["session"], r)["messages"]] == ["direct but logged"]


# ---- delivery, nudges, empty recv (R-ROOM-8, R-ROOM-12) -----------------------------

def test_nudge_names_rooms_messages_came_through(room, repos):
    a = join(room, repos["api"], rooms=["storefront"])
    b = join(room, repos["web"], rooms=["storefront"])
    room.send(a["session"], b["session"], "hi")
    offer = room.pending(b["session"])
    # the reader's first room is repo:web, but the message came through shared:storefront
    assert offer.rooms == ["shared:storefront"]
    assert "via shared:storefront" in offer.nudge and "repo:web" not in offer.nudge
    assert f'msg_recv(session="{b["session"]}")' in offer.nudge


def test_nudge_counts_rooms_beyond_two(room, repos):
    names = ["r1", "r2", "r3", "r4"]
    b = join(room, repos["web"], rooms=names)
    for n in names:
        s = room.join(cwd=str(repos["cli"]), rooms=[n], repo_room=False)
        room.send(s["session"], "*", f"from {n}")
    offer = room.pending(b["session"])
    assert "+2 more" in offer.nudge and "\n" not in offer.nudge


def test_retry_windows_tool_zero_stop_thirty_minutes(room, repos, clock):
    a = join(room, repos["api"], rooms=["s"])
    b = join(room, repos["web"], rooms=["s"], autonomy=HOLD)
    room.send(a["session"], "*", "m")
    assert room.pending(b["session"], "tool") is not None
    assert room.pending(b["session"], "tool") is not None  # re-offered at once on tool events
    assert room.pending(b["session"], "stop") is None  # within 30 min of the offer
    clock.advance(30 * 60 + 1)
    assert room.pending(b["session"], "stop") is not None


def test_empty_recv_says_why(room, repos):
    a = join(room, repos["api"], rooms=["s"])
    msg = room.recv(a["session"])["empty_because"]
    assert "nothing has ever been addressed" in msg and "nobody else" in msg
    b = join(room, repos["web"], rooms=["s"])
    room.send(a["session"], b["session"], "x")
    room.recv(b["session"])
    msg = room.recv(b["session"])["empty_because"]
    assert "caught up: 1 read" in msg
    c = join(room, repos["cli"], rooms=["s"])
    room.send(a["session"], b["session"], "not for c")
    assert "addressed to others" in room.recv(c["session"])["empty_because"]
    lonely = room.join(cwd=str(repos["cli"]), repo_room=False)
    assert "in no rooms" in room.recv(lonely["session"])["empty_because"]


def test_expired_messages_are_not_offered_and_said(room, repos, clock):
    a = join(room, repos["api"], rooms=["s"])
    b = join(room, repos["web"], rooms=["s"])
    room.send(a["session"], "*", "soon gone", ttl=60)
    clock.advance(61)
    assert room.pending(b["session"]) is None
    assert "1 expired" in room.recv(b["session"])["empty_because"]


def test_unread_does_not_mark_and_sent_shows_states(room, repos):
    a = join(room, repos["api"], rooms=["s"])
    b = join(room, repos["web"], rooms=["s"])
    room.send(a["session"], "*", "x")
    assert room.unread(b["session"])["unread"] == 1
    assert room.unread(b["session"])["unread"] == 1
    assert room.sent(a["session"])["messages"][0]["deliveries"] == {b["session"]: "stored"}
    room.pending(b["session"])
    assert room.sent(a["session"])["messages"][0]["deliveries"] == {b["session"]: "offered"}
    room.recv(b["session"])
    assert room.sent(a["session"])["messages"][0]["deliveries"] == {b["session"]: "read"}


def test_ended_session_keeps_mail_for_resume(room, repos):
    a = join(room, repos["api"], rooms=["s"])
    b = room.join(cwd=str(repos["web"]), rooms=["s"], harness="claude", harness_key="k1")
    room.send(a["session"], b["session"], "before end")
    room.end(b["session"])
    res = room.send(a["session"], b["session"], "after end")
    assert res["recipients"] == 1 and "ended" in res["note"]
    again = room.join(cwd=str(repos["web"]), harness="claude", harness_key="k1")
    assert again["session"] == b["session"] and again["unread"] == 2


# ---- leases (R-ROOM-5) -----------------------------------------------------------------

def test_lease_conflict_names_holder_repo_expiry(room, repos, clock):
    a = join(room, repos["api"], label="api-1")
    b = join(room, repos["api"], label="api-2")
    assert room.lease_acquire(a["session"], ["src/*.py"], ttl=600)["granted"]
    res = room.lease_acquire(b["session"], [str(repos["api"] / "src" / "db.py")])
    assert res["granted"] == []
    c = res["conflicts"][0]
    assert c["holder"] == a["session"] and c["repo"] == "repo:api" and c["expires_at"] and c["holder_label"] == "api-1"
    assert a["session"] in res["message"] and "repo:api" in res["message"] and "in 10m" in res["message"]


def test_same_path_other_repo_does_not_conflict(room, repos):
    a = join(room, repos["api"])
    b = join(room, repos["web"])
    assert room.lease_acquire(a["session"], ["src/**"])["granted"]
    assert room.lease_acquire(b["session"], ["src/x.py"])["granted"]


def test_shared_and_exclusive(room, repos):
    a = join(room, repos["api"])
    b = join(room, repos["api"])
    c = join(room, repos["api"])
    assert room.lease_acquire(a["session"], ["docs/**"], mode="shared")["granted"]
    assert room.lease_acquire(b["session"], ["docs/a.md"], mode="shared")["granted"]
    assert room.lease_acquire(c["session"], ["docs/a.md"], mode="exclusive")["conflicts"]
    assert room.lease_acquire(c["session"], ["src/a.py", "docs/b.md"])["granted"] == []  # all or nothing
    assert not room.conn.execute("SELECT 1 FROM leases WHERE session_id=? ", (c["session"],)).fetchone()


def test_holder_learns_of_expiry_and_takeover(room, repos, clock):
    a = join(room, repos["api"], label="first")
    b = join(room, repos["api"], label="second")
    room.lease_acquire(a["session"], ["src/x.py"], ttl=60)
    clock.advance(61)
    got = room.lease_acquire(b["session"], ["src/x.py"])
    assert got["granted"] and got["taken_over"][0]["holder"] == a["session"]
    offer = room.pending(a["session"])
    assert offer and "was taken by" in offer.messages[0]["body"] and b["session"] in offer.messages[0]["body"]
    renew = room.lease_renew(a["session"], ["src/x.py"])
    assert renew["renewed"] == [] and "taken by" in renew["not_held"][0]["reason"]


def test_holder_learns_of_plain_expiry(room, repos, clock):
    a = join(room, repos["api"])
    room.lease_acquire(a["session"], ["src/y.py"], ttl=30)
    clock.advance(31)
    offer = room.pending(a["session"])
    assert offer and "expired" in offer.messages[0]["body"]
    assert room.pending(a["session"], "stop") is None or True  # notice is delivered once; re-offers follow the windows
    assert room.conn.execute("SELECT count(*) FROM messages WHERE kind='notice'").fetchone()[0] == 1
    assert room.lease_renew(a["session"])["renewed"][0]["was_expired"] is True


def test_renew_and_release(room, repos, clock):
    a = join(room, repos["api"])
    b = join(room, repos["api"])
    room.lease_acquire(a["session"], ["src/z.py"], ttl=60)
    clock.advance(50)
    room.lease_renew(a["session"], ["src/z.py"], ttl=60)
    clock.advance(50)
    assert room.lease_acquire(b["session"], ["src/z.py"])["conflicts"]
    assert room.lease_release(a["session"])["released"] == ["src/z.py"]
    assert room.lease_acquire(b["session"], ["src/z.py"])["granted"]


def test_dead_holder_lease_taken_over_on_linux(room, repos):
    if not liveness.HAS_PROC:
        pytest.skip("exact liveness needs /proc")
    import subprocess, sys
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(timeout=10)
    a = room.join(cwd=str(repos["api"]), pid=os.getpid())
    room.conn.execute("UPDATE sessions SET pid=?, pid_start='1' WHERE id=?", (p.pid, a["session"]))
    b = join(room, repos["api"])
    room.lease_acquire(a["session"], ["src/q.py"])
    got = room.lease_acquire(b["session"], ["src/q.py"])
    assert got["granted"] and got["taken_over"][0]["reason"] == "holder gone"


# ---- divergence (R-ROOM-6) -------------------------------------------------------------

def test_divergence_names_who_changed_it(room, repos):
    f = repos["api"] / "src" / "models.py"
    f.write_text("v1\n")
    a = join(room, repos["api"], label="reader")
    b = join(room, repos["api"], label="writer")
    room.file_read(a["session"], "src/models.py")
    assert room.file_check(a["session"])["diverged"] == 0
    f.write_text("v2\n")
    room.file_read(b["session"], str(f))  # b wrote it (the hook records writes the same way)
    res = room.file_check(a["session"], ["src/models.py"])
    assert res["diverged"] == 1
    item = res["files"][0]
    assert item["changed_by"] == b["session"] and f"by {b['session']} (writer)/repo:api" in item["message"]
    f.write_text("v3\n")
    assert "outside agents-room" in room.file_check(a["session"])["files"][0]["message"]
    assert room.file_check(a["session"], ["src/never.py"])["files"][0]["status"] == "never-read"


# ---- presence and liveness (R-ROOM-4) --------------------------------------------------

def test_liveness_pid_start_and_marker():
    if not liveness.HAS_PROC:
        pytest.skip("exact liveness needs /proc")
    pid, start, marker = liveness.identity(os.getpid())
    assert liveness.is_alive(pid, start, marker) is True
    assert liveness.is_alive(pid, "12345", marker) is False  # a reused pid: other start time
    assert liveness.is_alive(pid, start, "h:other") is False  # other environment
    assert liveness.is_alive(None, None, None) is None


def test_same_harness_process_rejoins_same_session(room, repos):
    a = room.join(cwd=str(repos["api"]), pid=os.getpid())
    b = room.join(cwd=str(repos["api"]), pid=os.getpid(), rooms=["more"])
    assert a["session"] == b["session"] and "shared:more" in b["rooms"]


def test_who_states_and_prune_never_prunes_no_pid(room, repos, clock):
    import subprocess, sys
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(timeout=10)
    room.join(cwd=str(repos["api"]), pid=os.getpid(), label="live")
    room.join(cwd=str(repos["api"]), label="nopid")
    gone = room.join(cwd=str(repos["api"]), pid=p.pid, label="gone")  # its process has exited
    states = {s["label"]: s["state"] for s in room.who()["sessions"]}
    assert states == {"live": "live", "nopid": "no-pid", "gone": "gone"}
    clock.advance(30 * 24 * 3600)
    dry = room.prune(dry_run=True)
    assert dry["gone_sessions"] == [gone["session"]]
    room.prune()
    left = {s["label"] for s in room.who(include_ended=True)["sessions"]}
    assert left == {"live", "nopid"}


# ---- doctor (R-ROOM-13) ----------------------------------------------------------------

def test_doctor_reports_below_wake_and_stale(room, repos, clock):
    a = room.join(cwd=str(repos["api"]), pid=os.getpid(), autonomy=HOLD, rooms=["s"])
    b = room.join(cwd=str(repos["web"]), autonomy=WAKE, rooms=["s"])
    room.send(b["session"], "*", "x")
    room.pending(a["session"])
    clock.advance(2 * 3600)
    rep = room.doctor()
    assert [x["session"] for x in rep["below_wake"]] == [a["session"]]
    assert rep["stale_deliveries"][0]["recipient"] == a["session"]
    assert rep["integrity"] == "ok" and rep["schema_version"]["found"] == rep["schema_version"]["expected"]


def test_doctor_split_rooms_are_named_not_moved(room, repos):
    legacy = room.conn.execute("INSERT INTO rooms(name, created_at) VALUES ('storefront', 1)").lastrowid
    a = join(room, repos["api"])
    room.conn.execute("INSERT INTO memberships VALUES (?, ?, 1)", (a["session"], legacy))
    join(room, repos["web"], rooms=["storefront"])  # joins the normalised shared:storefront
    rep = room.doctor(fix=True)
    split = rep["split_rooms"][0]
    assert split["split_from"] == "storefront" and split["room"] == "shared:storefront"
    assert split["fix"][0] == [
        f"agents-room leave --session {a['session']} --room storefront",
        f"agents-room join --session {a['session']} --room shared:storefront",
    ]
    assert "storefront" in room.who(session=a["session"])["sessions"][0]["rooms"]  # not moved by --fix


def test_doctor_fix_collapses_duplicate_chat_rows(room, repos, clock):
    a = room.join(cwd=str(repos["api"]), harness="claude", harness_key="chat-1", rooms=["s"])
    sender = join(room, repos["web"], rooms=["s"])
    room.send(sender["session"], a["session"], "to the old row")
    clock.advance(1)
    room.conn.execute(
        "INSERT INTO sessions(id, harness, harness_key, cwd, created_at, last_seen, autonomy, tags) VALUES ('s-dup00001','claude','chat-1','/x',?,?,0,'[]')",
        (clock(), clock()),
    )
    rep = room.doctor()
    assert rep["duplicate_chats"] == [{"keep": "s-dup00001", "duplicates": [a["session"]]}]
    rep = room.doctor(fix=True)
    assert rep["fixed"]
    got = room.recv("s-dup00001")
    assert [m["body"] for m in got["messages"]] == ["to the old row"]


def test_maybe_prune_runs_at_most_daily(room, repos, clock):
    assert room.maybe_prune() is not None
    assert room.maybe_prune() is None
    clock.advance(24 * 3600 + 1)
    assert room.maybe_prune() is not None


def test_mcp_first_then_hook_is_one_session_but_clear_is_another(room, repos):
    mcp = room.join(cwd=str(repos["api"]), pid=os.getpid(), harness="claude")  # room_join before SessionStart
    hook = room.join(cwd=str(repos["api"]), pid=os.getpid(), harness="claude", harness_key="chat-1")
    assert hook["session"] == mcp["session"]
    cleared = room.join(cwd=str(repos["api"]), pid=os.getpid(), harness="claude", harness_key="chat-2")  # /clear
    assert cleared["session"] != mcp["session"]


def test_doctor_fix_keeps_two_chats_of_one_harness_process_apart(room, repos, clock):
    # /clear in one harness process: two chats (two harness keys) share a pid and its start time
    a = room.join(cwd=str(repos["api"]), pid=os.getpid(), harness="claude", harness_key="chat-A", rooms=["s"])
    clock.advance(1)
    b = room.join(cwd=str(repos["api"]), pid=os.getpid(), harness="claude", harness_key="chat-B", rooms=["s"])
    assert a["session"] != b["session"]
    sender = join(room, repos["web"], rooms=["s"])
    room.send(sender["session"], a["session"], "for chat A")
    rep = room.doctor(fix=True)
    assert rep["duplicate_chats"] == []
    row = room.conn.execute("SELECT ended_at FROM sessions WHERE id=?", (a["session"],)).fetchone()
    assert row["ended_at"] is None
    assert [m["body"] for m in room.recv(a["session"])["messages"]] == ["for chat A"]


def test_doctor_still_collapses_keyless_rows_of_one_process(room, repos, clock):
    a = room.join(cwd=str(repos["api"]), pid=os.getpid(), harness="cli")
    clock.advance(1)
    room.conn.execute(
        "INSERT INTO sessions(id, harness, cwd, pid, pid_start, env_marker, created_at, last_seen, autonomy, tags) "
        "SELECT 's-dup00002', harness, cwd, pid, pid_start, env_marker, ?, ?, 0, '[]' FROM sessions WHERE id=?",
        (clock(), clock(), a["session"]),
    )
    assert room.doctor()["duplicate_chats"] == [{"keep": "s-dup00002", "duplicates": [a["session"]]}]


def test_rejoin_by_session_keeps_its_repo_unless_cwd_is_given(room, repos, monkeypatch):
    a = join(room, repos["api"] / "src", rooms=["storefront"])
    room.lease_acquire(a["session"], [str(repos["api"] / "src" / "a.py")])
    monkeypatch.chdir(repos["web"])  # e.g. doctor's fix command run from another checkout
    again = room.join(session=a["session"], rooms=["canon"])
    assert again["repo"] == "repo:api"
    assert again["rooms"] == ["repo:api", "shared:canon", "shared:storefront"]
    row = room.session_row(a["session"])
    assert (row["repo"], row["repo_root"], row["cwd"]) == ("repo:api", str(repos["api"]), str(repos["api"] / "src"))
    assert room.conn.execute("SELECT repo FROM leases WHERE session_id=?", (a["session"],)).fetchone()[0] == "repo:api"
    assert room.leases_against(join(room, repos["api"])["session"], "src/a.py")  # the lease still guards api
    moved = room.join(session=a["session"], cwd=str(repos["web"]))  # an explicit cwd still moves it
    assert moved["repo"] == "repo:web" and "repo:web" in moved["rooms"]


@pytest.mark.parametrize("first_call", ["recv", "unread", "lease_renew"])
def test_mcp_only_holder_learns_of_expiry_without_hooks(room, repos, clock, first_call):
    # no hook ever runs pending(): recv, unread and lease_renew must tell of the expiry themselves
    a = join(room, repos["api"])
    room.lease_acquire(a["session"], ["src/w.py"], ttl=30)
    clock.advance(31)
    if first_call == "recv":
        got = room.recv(a["session"])["messages"]
    elif first_call == "unread":
        got = room.unread(a["session"])["messages"]
        assert got and "expired" in got[0]["preview"]
        got = room.recv(a["session"])["messages"]
    else:
        assert room.lease_renew(a["session"])["renewed"][0]["was_expired"] is True
        got = room.recv(a["session"])["messages"]
    assert len(got) == 1 and got[0]["from"] == "agents-room" and "src/w.py expired" in got[0]["body"]
    assert room.conn.execute("SELECT count(*) FROM messages WHERE kind='notice'").fetchone()[0] == 1


def test_relative_paths_resolve_against_the_session_cwd_in_a_sub_folder(room, repos):
    api = repos["api"]
    (api / "pkg").mkdir()
    (api / "pkg" / "mod.py").write_text("in pkg")
    (api / "mod.py").write_text("at the root")
    sub = join(room, api / "pkg")  # an agent started in a sub-folder
    rd = room.file_read(sub["session"], "mod.py")
    assert rd["path"] == "pkg/mod.py"
    assert rd["hash"] == room.file_read(join(room, api)["session"], "pkg/mod.py")["hash"]
    chk = room.file_check(sub["session"], ["mod.py"])
    assert [(f["path"], f["status"]) for f in chk["files"]] == [("pkg/mod.py", "same")]
    (api / "pkg" / "mod.py").write_text("changed")
    assert room.file_check(sub["session"])["files"][0]["status"] == "changed"  # stored paths stay root-relative
    got = room.lease_acquire(sub["session"], ["*.py", "./sub/", "../docs/x.md"])
    assert [g["pattern"] for g in got["granted"]] == ["pkg/*.py", "pkg/sub/**", "docs/x.md"]
    other = join(room, api)
    assert room.lease_acquire(other["session"], ["pkg/mod.py"])["conflicts"]
    assert room.lease_acquire(other["session"], ["mod.py"])["granted"]  # the root file is not covered
    assert room.leases_against(other["session"], str(api / "pkg" / "mod.py"))
    assert [r["pattern"] for r in room.lease_renew(sub["session"], ["*.py"])["renewed"]] == ["pkg/*.py"]
    assert room.lease_release(sub["session"], ["*.py"])["released"] == ["pkg/*.py"]


def test_stop_guard_flag_does_not_outlive_its_turn(room, repos, clock):
    me = room.join(cwd=str(repos["api"]), rooms=["s"], autonomy="hold", harness="claude")["session"]
    peer = join(room, repos["web"], rooms=["s"])["session"]
    room.send(peer, me, "one")
    assert room.stop_check(me, harness="claude") is not None  # held; the turn is then interrupted
    clock.advance(30)
    room.send(peer, me, "two")
    assert room.stop_check(me, harness="claude") is None  # within the guard: the Stop right after a hold
    room.send(peer, me, "three")
    assert room.stop_check(me, harness="claude") is not None
    # this turn never reaches Stop again (Esc, crash); much later another turn stops
    clock.advance(11 * 60)
    room.send(peer, me, "four")
    assert room.stop_check(me, harness="claude") is not None  # the stale flag did not let it through


def test_stop_guard_flag_cleared_by_a_tool_event_of_another_turn(room, repos, clock):
    me = room.join(cwd=str(repos["api"]), rooms=["s"], autonomy="hold", harness="codex")["session"]
    peer = join(room, repos["web"], rooms=["s"])["session"]
    room.send(peer, me, "one")
    assert room.stop_check(me, harness="codex", turn_id="t1") is not None
    flag = lambda: room.conn.execute("SELECT stop_block_pending FROM sessions WHERE id=?", (me,)).fetchone()[0]
    room.tool_seen(me, turn_id="t1")  # the same turn goes on: the flag stays
    assert flag() == 1
    room.tool_seen(me, turn_id="t2")
    assert flag() == 0


def test_who_answers_in_a_fixed_number_of_statements_whatever_the_room_holds(room, repos):
    """`who` is on every platform run's start (run-config's intro) and a project room holds a
    team's agents: two statements for all members' leases and rooms, not two per member."""
    members = [room.join(cwd=str(repos["api" if i % 2 else "web"]), label=f"agent {i}", rooms=["team", f"own-{i}"])
               for i in range(12)]
    room.lease_acquire(members[3]["session"], ["src/a.py", "src/b.py"])
    room.lease_acquire(members[8]["session"], "docs/*.md", mode="shared")
    statements: list[str] = []
    room.conn.set_trace_callback(statements.append)
    try:
        seen = room.who(session=members[0]["session"])["sessions"]
    finally:
        room.conn.set_trace_callback(None)
    assert len(statements) <= 4, statements
    by_label = {s["label"]: s for s in seen}
    assert set(by_label) == {f"agent {i}" for i in range(12)}
    assert by_label["agent 3"]["rooms"] == sorted(by_label["agent 3"]["rooms"]) and "shared:team" in by_label["agent 3"]["rooms"]
    assert [x["pattern"] for x in by_label["agent 3"]["leases"]] == ["src/a.py", "src/b.py"]
    assert by_label["agent 8"]["leases"][0]["mode"] == "shared" and by_label["agent 5"]["leases"] == []
    assert all(isinstance(x["expires_at"], str) for x in by_label["agent 3"]["leases"])
