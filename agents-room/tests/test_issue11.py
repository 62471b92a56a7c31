"""Issue 11: what the seed asks that was loose, and threads, acknowledgements, search and the commit
guard (R-ROOM-5, R-ROOM-7, R-ROOM-10, R-ROOM-13, R-ROOM-16, R-ROOM-17, R-ROOM-18)."""

import json
import os
import subprocess
import sys
import time

import pytest
from mcp import Client

from agents_room.mcp_server import build_server
from agents_room.room import Room, RoomError

from room_helpers import run_cli


def git(*args, cwd):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=30)


# ------------------------------------------------------------------------------------- loose today
@pytest.mark.parametrize("pattern", ["", "   ", "../../..", "/", "/etc/passwd", "a\x00b", "."])
def test_a_lease_that_protects_nothing_is_refused_with_the_reason(room, repos, pattern):
    a = room.join(cwd=str(repos["api"]))["session"]
    b = room.join(cwd=str(repos["api"]), label="other")["session"]
    with pytest.raises(RoomError, match="lease pattern|resolves outside"):
        room.lease_acquire(a, [pattern])
    assert room.lease_list()["leases"] == []
    for p in ("README.md", "src/**", "*"):
        assert room.lease_acquire(b, [p])["granted"]


def test_a_lease_outside_any_repository_is_refused(room, tmp_path):
    a = room.join(cwd=str(tmp_path))["session"]
    with pytest.raises(RoomError, match="not in a git repository"):
        room.lease_acquire(a, ["x.py"])


@pytest.mark.parametrize("sel, says", [("tag:", "names no tag"), ("file:", "names no path"), ("file:[", "never closed"),
                                      ("file:repo:nope/x", "no session has ever been in repo:nope"),
                                      ("file:repo:api", "names no path")])
def test_a_selector_that_can_match_nobody_is_an_error_and_nothing_is_stored(room, repos, sel, says):
    a = room.join(cwd=str(repos["api"]), rooms=["x"])["session"]
    room.join(cwd=str(repos["web"]), rooms=["x"])
    with pytest.raises(RoomError, match=says):
        room.send(a, sel, "hello")
    assert room.sent(a)["messages"] == []


def test_an_ended_session_cannot_send(room, repos):
    a = room.join(cwd=str(repos["api"]), rooms=["x"])["session"]
    room.join(cwd=str(repos["web"]), rooms=["x"])
    room.end(a)
    with pytest.raises(RoomError, match="has ended"):
        room.send(a, "*", "from beyond")


def test_one_process_hosting_several_agents_gets_one_session_each(room, repos):
    """Same pid, no session id: another repo or another label is another agent; the same chat is one."""
    pid = os.getpid()
    a = room.join(cwd=str(repos["api"]), label="api-agent", pid=pid)
    b = room.join(cwd=str(repos["web"]), label="web-agent", pid=pid)
    c = room.join(cwd=str(repos["api"]), label="reviewer", pid=pid)
    same = room.join(cwd=str(repos["api"]), label="api-agent", pid=pid)
    unlabeled = room.join(cwd=str(repos["api"]), pid=pid)  # an MCP join of the same chat, without a label
    assert len({a["session"], b["session"], c["session"]}) == 3
    assert same["session"] == a["session"] and unlabeled["session"] in {a["session"], c["session"]}
    assert room.who(session=b["session"])["sessions"][0]["rooms"] == ["repo:web"]


def test_renew_after_a_takeover_says_the_lease_was_lost(room, repos, clock):
    a = room.join(cwd=str(repos["api"]), label="a")["session"]
    b = room.join(cwd=str(repos["api"]), label="b")["session"]
    room.lease_acquire(a, ["src/x.py"], ttl=60)
    clock.advance(61)
    assert room.lease_acquire(b, ["src/x.py"])["granted"]
    res = room.lease_renew(a)
    assert res["renewed"] == [] and res["lost"][0]["taken_by"] == b and "taken over by" in res["message"]


def test_sent_shows_an_expired_message_as_expired_with_labels(room, repos, clock):
    a = room.join(cwd=str(repos["api"]), rooms=["x"])["session"]
    b = room.join(cwd=str(repos["web"]), rooms=["x"], label="bob")["session"]
    room.send(a, "*", "soon gone", ttl=10)
    clock.advance(11)
    m = room.sent(a)["messages"][0]
    assert m["deliveries"] == {b: "expired"} and m["recipient_labels"] == {b: "bob"}


def test_doctor_json_ok_agrees_with_the_exit_code(db, repos):
    r = Room.open(db)
    a = r.join(cwd=str(repos["api"]), rooms=["x"])["session"]
    r.conn.execute("UPDATE sessions SET autonomy=0, pid=?, pid_start=NULL WHERE id=?", (os.getpid(), a))
    r.send(r.join(cwd=str(repos["web"]), rooms=["x"])["session"], a, "x")
    r.conn.execute("UPDATE deliveries SET state='offered', offered_at=0")
    res = run_cli("doctor", "--json")
    rep = json.loads(res.stdout)
    assert rep["problems"] and rep["ok"] is False and res.returncode == 1


def test_stop_reason_counts_every_unread_message(room, repos):
    me = room.join(cwd=str(repos["api"]), rooms=["x"], autonomy="hold", harness="codex")["session"]
    peer = room.join(cwd=str(repos["web"]), rooms=["x"])["session"]
    room.send(peer, me, "first")
    room.pending(me, "tool")  # offered just now: not due again at Stop for 30 minutes
    room.send(peer, me, "second")
    offer = room.stop_check(me, harness="codex", turn_id="t1")
    assert [m["body"] for m in offer.messages] == ["second"] and "2 unread messages" in offer.nudge


async def test_mcp_join_takes_autonomy_by_name_and_every_parameter_is_described(db, repos):
    async with Client(build_server(db)) as c:
        tools = (await c.list_tools()).tools
        missing = [(t.name, k) for t in tools for k, v in t.input_schema["properties"].items() if not v.get("description")]
        assert missing == []
        res = await c.call_tool("room_join", {"cwd": str(repos["api"]), "autonomy": "hold"})
        assert not res.is_error and res.structured_content["autonomy"] == "hold"
        me = res.structured_content["session"]
        other = Room.open(db)
        o = other.join(cwd=str(repos["api"]), label="holder")["session"]
        other.lease_acquire(o, ["src/**"])
        other.close()
        conflict = await c.call_tool("lease_acquire", {"session": me, "paths": ["src/a.py"]})
        assert conflict.is_error and "CONFLICT: " in conflict.content[0].text.splitlines()[0]
        assert o in conflict.content[0].text


@pytest.mark.parametrize("argv", [["--event=Nope"], ["--event=Stop", "--harness=gemini"], ["--event=Stop", "--bogus"],
                                  ["--event=SessionStart", "--wake-timeout=abc"]])
def test_a_hook_with_bad_arguments_fails_open(db, argv):
    res = run_cli("hook", *argv, input=json.dumps({"session_id": "c1", "cwd": "/"}))
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


def test_a_misspelt_autonomy_still_joins_and_says_so(db, repos):
    res = run_cli("hook", "--event=SessionStart", "--autonomy=wakee",
                  input=json.dumps({"session_id": "c1", "cwd": str(repos["api"])}))
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert res.returncode == 0 and "wakee" in ctx and "repo:api" in ctx
    assert Room.open(db).who()["sessions"][0]["rooms"] == ["repo:api"]


def test_watch_with_a_bad_room_and_output_into_head_are_one_line_or_quiet(db, repos):
    bad = run_cli("watch", "--room", "bad name", "--timeout", "1")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    r = Room.open(db)
    a = r.join(cwd=str(repos["api"]), rooms=["x"])["session"]
    r.join(cwd=str(repos["web"]), rooms=["x"])
    for i in range(300):
        r.send(a, "*", f"line {i}\n" * 20)
    p = subprocess.run(f"{sys.executable} -m agents_room history --session {a} --limit 300 | head -1", shell=True,
                       capture_output=True, text=True, timeout=60, env={**os.environ})
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr and p.stdout.count("\n") == 1


def test_history_is_for_members_and_direct_messages_for_their_parties(room, repos):
    a = room.join(cwd=str(repos["api"]), rooms=["x"])["session"]
    b = room.join(cwd=str(repos["web"]), rooms=["x"])["session"]
    c = room.join(cwd=str(repos["web"]), rooms=["x"], label="c")["session"]
    outsider = room.join(cwd=str(repos["cli"]), rooms=["y"])["session"]
    room.send(a, "*", "for everyone")
    room.send(a, b, "just for b")
    with pytest.raises(RoomError, match="not in room"):
        room.history(outsider, "x")
    assert [m["body"] for m in room.history(b, "x")["messages"]] == ["for everyone", "just for b"]
    assert [m["body"] for m in room.history(c, "x")["messages"]] == ["for everyone"]


def test_bodies_and_one_receive_are_bounded(room, repos, monkeypatch):
    from agents_room import messaging

    a = room.join(cwd=str(repos["api"]), rooms=["x"])["session"]
    b = room.join(cwd=str(repos["web"]), rooms=["x"])["session"]
    with pytest.raises(RoomError, match="over the limit of 65536"):
        room.send(a, "*", "x" * (10 * 1024 * 1024))
    monkeypatch.setattr(messaging, "MAX_RECV_BYTES", 100_000)
    for i in range(5):
        room.send(a, "*", f"{i}" * 60_000)
    first = room.recv(b)
    assert len(first["messages"]) == 1 and first["remaining"] == 4 and "msg_recv again" in first["hint"]
    assert len(room.recv(b)["messages"]) == 1  # the rest stayed unread


def test_cli_for_people(db, repos, tmp_path):
    a = json.loads(run_cli("join", "--room", "x", "--tag", "backend", "--label", "alice", "--json", cwd=repos["api"]).stdout)["session"]
    b = json.loads(run_cli("join", "--room", "x", "--label", "bob", "--json", cwd=repos["web"]).stdout)["session"]
    assert run_cli("send", "--session", a, "--to", "all", "hi").returncode == 0
    piped = run_cli("send", "--session", a, "--to", "*", "-", input="from stdin\nsecond line\n")
    assert piped.returncode == 0
    (tmp_path / "README.md").write_text("x")
    globbed = run_cli("send", "--session", a, "--to", "README.md", "oops", cwd=tmp_path)
    assert globbed.returncode == 1 and "--to all" in globbed.stderr
    unread = run_cli("unread", "--session", b)
    assert unread.stdout.startswith("2 unread") and "from stdin" in run_cli("recv", "--session", b).stdout
    assert "bob:read" in run_cli("sent", "--session", a).stdout
    who = run_cli("who").stdout
    assert "TAGS" in who and "backend" in who and "LAST SEEN" in who
    run_cli("lease", "release", "--session", a)
    Room.open(db).lease_acquire(a, ["src/**"])
    listed = json.loads(run_cli("lease", "list", "--json").stdout)["leases"]
    assert [x["pattern"] for x in listed] == ["src/**"] and listed[0]["holder_label"] == "alice"
    forced = run_cli("lease", "release", "--force", str(listed[0]["lease_id"]))
    assert forced.returncode == 0 and json.loads(run_cli("lease", "list", "--json").stdout)["leases"] == []
    assert "released by" in Room.open(db).unread(a)["messages"][-1]["preview"] + "".join(
        m["body"] for m in Room.open(db).recv(a)["messages"])
    check = run_cli("file", "check", "--session", b)
    assert check.returncode == 0 and "0 diverged" in check.stdout


# ------------------------------------------------------------------- threads, acks, importance
def test_threads_reach_their_participants(room, repos):
    a = room.join(cwd=str(repos["api"]), rooms=["x"], label="a")["session"]
    b = room.join(cwd=str(repos["web"]), rooms=["x"], label="b")["session"]
    c = room.join(cwd=str(repos["cli"]), rooms=["x"], label="c")["session"]
    q = room.send(a, b, "does /orders page?")
    assert q["thread"] == q["message_id"]
    r = room.send(b, None, "yes, cursor-based", reply_to=q["message_id"])
    assert r["thread"] == q["message_id"] and r["recipient_ids"] == [a]  # c was never in the thread
    r2 = room.send(a, c, "looping c in", reply_to=r["message_id"])
    assert set(r2["recipient_ids"]) == {b, c}
    got = room.recv(a)["messages"]
    assert got[0]["reply_to"] == q["message_id"] and got[0]["thread"] == q["message_id"]
    t = room.thread(c, q["message_id"])
    assert [m["body"] for m in t["messages"]] == ["looping c in"]  # c sees what it may see
    assert [m["body"] for m in room.thread(b, q["message_id"])["messages"]] == [
        "does /orders page?", "yes, cursor-based", "looping c in"]
    with pytest.raises(RoomError, match="no message #999"):
        room.send(a, None, "x", reply_to=999)


def test_acknowledgements_and_urgent_first(room, repos):
    a = room.join(cwd=str(repos["api"]), rooms=["x"], label="a")["session"]
    b = room.join(cwd=str(repos["web"]), rooms=["x"], label="b")["session"]
    c = room.join(cwd=str(repos["cli"]), rooms=["x"], label="c")["session"]
    room.send(a, "*", "fyi, low stakes", importance="low")
    m = room.send(a, "*", "freeze main: deploy in progress", importance="urgent", ack_required=True)
    offer = room.pending(b, "tool")
    assert offer.nudge.startswith("agents-room: URGENT #%d from a: 'freeze main" % m["message_id"])
    assert "msg_ack" in offer.nudge
    assert room.ack(b, [m["message_id"]])["acked"] == [m["message_id"]]
    assert room.ack(b, [12345])["refused"][0]["reason"] == "not addressed to you"
    sent = [x for x in room.sent(a)["messages"] if x["id"] == m["message_id"]][0]
    assert sent["acked_by"] == [b] and sent["not_acked"] == [c] and sent["importance"] == "urgent"
    with pytest.raises(RoomError, match="importance must be one of"):
        room.send(a, "*", "x", importance="critical")


# ------------------------------------------------------------------------------------------ search
def test_search_sees_only_what_the_session_may_see(room, repos):
    a = room.join(cwd=str(repos["api"]), rooms=["x"])["session"]
    b = room.join(cwd=str(repos["web"]), rooms=["x"])["session"]
    c = room.join(cwd=str(repos["web"]), rooms=["x"], label="c")["session"]
    d = room.join(cwd=str(repos["cli"]), rooms=["elsewhere"])["session"]
    room.send(a, "*", "the orders API now paginates with a cursor")
    room.send(a, b, "private: the orders token rotates friday")
    room.send(a, "*", "unrelated chatter")
    assert [m["body"] for m in room.search(b, "orders")["messages"]] != []
    assert len(room.search(b, "orders")["messages"]) == 2
    assert [m["body"] for m in room.search(c, "orders")["messages"]] == ["the orders API now paginates with a cursor"]
    assert room.search(d, "orders")["messages"] == []
    assert len(room.search(c, 'pagin*')["messages"]) == 1
    assert room.search(c, '"now paginates"')["matches"] == 1
    assert room.search(c, 'AND OR NOT ( " *')["matches"] == 0  # no input is an FTS5 syntax error
    assert "1 match" in run_cli("search", "--session", c, "cursor").stdout


# ----------------------------------------------------------------------------------- commit guard
def test_commit_guard_refuses_files_another_live_session_holds(db, tmp_path):
    repo = tmp_path / "shop"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "src").mkdir()
    (repo / "src" / "api.py").write_text("x = 1\n")
    (repo / "README.md").write_text("shop\n")
    git("add", ".", cwd=repo)
    assert git("commit", "-qm", "one", cwd=repo).returncode == 0
    res = run_cli("guard", "install", "--repo", str(repo))
    assert res.returncode == 0 and "installed" in res.stdout
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # another live chat
    try:
        r = Room.open(db)
        h = r.join(cwd=str(repo), label="api agent", pid=holder.pid)["session"]
        r.lease_acquire(h, ["src/**"])
        (repo / "src" / "api.py").write_text("x = 2\n")
        (repo / "README.md").write_text("shop!\n")
        git("add", ".", cwd=repo)
        began = time.monotonic()
        refused = git("commit", "-qm", "two", cwd=repo)
        assert refused.returncode != 0 and time.monotonic() - began < 10
        assert "src/api.py" in refused.stderr and h in refused.stderr and "api agent" in refused.stderr
        assert "until" in refused.stderr and "--no-verify" in refused.stderr
        git("reset", "-q", "src/api.py", cwd=repo)
        assert git("commit", "-qm", "readme only", cwd=repo).returncode == 0  # unleased files pass
        git("add", ".", cwd=repo)
        assert git("commit", "--no-verify", "-qm", "anyway", cwd=repo).returncode == 0
        # the committer's own lease is never in its way: this process (an ancestor of git commit) holds one
        mine = r.join(cwd=str(repo), label="me", pid=os.getpid())["session"]
        r.lease_release(h)
        r.lease_acquire(mine, ["src/**"])
        (repo / "src" / "api.py").write_text("x = 2.5\n")
        git("add", ".", cwd=repo)
        assert git("commit", "-qm", "my own lease", cwd=repo).returncode == 0
        # fails open: an unreadable store lets the commit through
        (repo / "src" / "api.py").write_text("x = 3\n")
        git("add", ".", cwd=repo)
        r.close()
        db.write_bytes(b"garbage" * 100)
        ok = git("commit", "-qm", "store broken", cwd=repo)
        assert ok.returncode == 0 and "not checked" in ok.stderr
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_guard_install_keeps_a_foreign_hook(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\nmake lint\n")
    res = run_cli("guard", "install", "--repo", str(repo))
    assert res.returncode == 1 and "already exists" in res.stderr and hook.read_text() == "#!/bin/sh\nmake lint\n"
    assert run_cli("guard", "install", "--repo", str(tmp_path / "nope")).returncode == 1
