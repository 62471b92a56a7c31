"""Issue 9, agents-room parts: platform runs are headless (no wake hold), the room is the person's
repository (not the checkout folder), Codex gets the feature flag it reads; and `run-config`, the
JSON a platform reads instead of importing agents-room (issue 10 item 7; R-ROOM-3, R-ROOM-15)."""

import json
import os
import subprocess
import time

from agents_room.naming import repo_of
from agents_room.room import Room

from room_helpers import PY, run_cli, run_hook_command


def git(*args, cwd):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env, timeout=30)


def test_issue9_a_worktree_joins_the_repository_room_not_its_folder(tmp_path, room):
    main = tmp_path / "myrepo"
    main.mkdir()
    git("init", "-q", "-b", "main", cwd=main)
    (main / "a.py").write_text("x = 1\n")
    git("add", ".", cwd=main)
    git("commit", "-qm", "one", cwd=main)
    work = tmp_path / "daemon" / "tasks" / "workdir"
    git("worktree", "add", "-q", "-b", "task-1", str(work), cwd=main)
    (main / "sub").mkdir()
    repo_of.cache_clear()
    assert repo_of(str(work)) == ("repo:myrepo", str(work))
    mine = room.join(cwd=str(main / "sub"), label="person")
    agent = room.join(cwd=str(work), label="agent")
    assert mine["repo"] == agent["repo"] == "repo:myrepo"
    assert agent["session"] in {o["session"] for o in room.who(session=mine["session"])["sessions"]}
    # a worktree of the daemon's bare repository cache, whose origin is the person's checkout (its .git)
    cache = tmp_path / "cache" / "3f2a.git"
    git("clone", "-q", "--bare", str(main), str(cache), cwd=tmp_path)
    git("config", "remote.origin.url", str(main / ".git"), cwd=cache)
    git("worktree", "add", "-q", "--detach", str(tmp_path / "wt2"), "main", cwd=cache)
    repo_of.cache_clear()
    assert repo_of(str(tmp_path / "wt2"))[0] == "repo:myrepo"
    # a worktree of a bare repository without a remote is named after that repository, without .git
    plain = tmp_path / "shop.git"
    git("clone", "-q", "--bare", str(main), str(plain), cwd=tmp_path)
    git("remote", "remove", "origin", cwd=plain)
    git("worktree", "add", "-q", "--detach", str(tmp_path / "wt3"), "main", cwd=plain)
    repo_of.cache_clear()
    assert repo_of(str(tmp_path / "wt3"))[0] == "repo:shop"


def _run_config(*args, cwd) -> dict:
    res = run_cli("run-config", *args, cwd=cwd)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_issue9_a_headless_run_is_never_held_by_a_stop_hook(tmp_path, repos, db):
    cfg = _run_config("--harness=claude", f"--config-dir={tmp_path / 'run'}", f"--cwd={repos['api']}",
                      "--room=project-shop", "--label=agent", "--autonomy=wake", cwd=repos["api"])
    assert cfg["autonomy"] == "hold"  # wake asked for a headless run is hold: nobody is there to wake
    settings = json.loads(open(cfg["args"][cfg["args"].index("--settings") + 1]).read())
    stops = [h for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    assert [("--wake" in h["command"], h.get("async", False)) for h in stops] == [(False, False)]
    env = {**os.environ, **cfg["env"], "AGENTS_ROOM_DB": str(db)}
    # joined by run-config itself (no SessionStart hook runs before Claude Code's first request)
    assert "SessionStart" not in settings["hooks"] and cfg["env"]["AGENTS_ROOM_SESSION"] == cfg["session"]
    chat = {"session_id": "run-1", "cwd": str(repos["api"])}
    r = Room.open(db)
    me = r.who()["sessions"][0]["session"]
    assert me == cfg["session"] and f"you are session {me} (agent)" in cfg["intro"]
    other = r.join(cwd=str(repos["web"]), rooms=["project-shop"])["session"]
    for with_mail in (False, True):
        if with_mail:
            r.send(other, "*", "the /orders API pages now")
        began = time.monotonic()
        res = run_hook_command(stops[0]["command"], json.dumps({**chat, "hook_event_name": "Stop"}), env)
        assert time.monotonic() - began < 2.0 and res.returncode == 0
        # with mail the turn is held once (the model reads it), never the process after its result
        assert ('"decision": "block"' in res.stdout) is with_mail
    assert r.session_row(me)["wake_waiter"] is None
    # below wake by design, so doctor does not report it; a person's chat at hold still is
    assert r.who()["sessions"][-1]["tags"] == ["headless"] or any(s["tags"] == ["headless"] for s in r.who()["sessions"])
    r.conn.execute("UPDATE sessions SET autonomy=1 WHERE id=?", (other,))
    r.conn.execute("UPDATE sessions SET pid=?, pid_start=NULL WHERE id=?", (os.getpid(), other))
    assert [b["session"] for b in r.doctor()["below_wake"]] == [other]
    r.close()


def test_run_config_interactive_registers_the_wake_hook_and_codex_reads_features_hooks(tmp_path, repos):
    cfg = _run_config("--harness=claude", f"--config-dir={tmp_path / 'chat'}", f"--cwd={repos['web']}", "--interactive",
                      cwd=repos["web"])
    settings = json.loads(open(cfg["files"][1]).read())
    assert cfg["autonomy"] == "wake" and any(h.get("async") and "--wake" in h["command"]
                                             for g in settings["hooks"]["Stop"] for h in g["hooks"])
    codex = _run_config("--harness=codex", f"--config-dir={tmp_path / 'cx'}", f"--cwd={repos['web']}", "--room=p",
                        cwd=repos["web"])
    assert "features.hooks=true" in codex["args"] and not any("codex_hooks" in a for a in codex["args"])
    assert codex["rooms"] == ["shared:p"] and codex["repo_room"] == "repo:web"
    bad = run_cli("run-config", "--harness=claude", f"--config-dir={tmp_path}", f"--cwd={repos['web']}", "--room=bad name")
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1 and "invalid room name" in bad.stderr


def test_run_config_stdin_answers_one_run_given_later(tmp_path, repos, db):
    """`run-config --stdin`: a platform starts it ahead of its next run; the run's arguments come
    later as one JSON array line, the answer is run-config's; end of input exits quietly."""
    args = ["--harness=claude", f"--config-dir={tmp_path / 'r'}", f"--cwd={repos['web']}", "--room=project-shop",
            "--label=agent"]
    res = run_cli("run-config", "--stdin", input=json.dumps(args) + "\n")
    assert res.returncode == 0, res.stderr
    cfg = json.loads(res.stdout)
    assert cfg["rooms"] == ["shared:project-shop"] and cfg["repo_room"] == "repo:web" and cfg["session"]
    assert Room.open(db).session_row(cfg["session"])["label"] == "agent"
    quiet = run_cli("run-config", "--stdin", input="")
    assert quiet.returncode == 0 and quiet.stdout == quiet.stderr == ""
    bad = run_cli("run-config", "--stdin", input='{"harness": "claude"}\n')
    assert bad.returncode == 2 and "one JSON array" in bad.stderr
    wrong = run_cli("run-config", "--stdin", input=json.dumps(["--harness=claude", "--room=bad name"]) + "\n")
    assert wrong.returncode != 0 and wrong.stdout == ""


def test_run_config_serve_answers_many_runs_one_line_each(tmp_path, repos, db):
    """`run-config --serve`: one process configures run after run (a JSON array line in, a JSON
    line out with run-config's exit code and output); a bad run does not end it; end of input exits 0."""
    runs = [["--harness=claude", f"--config-dir={tmp_path / f'r{i}'}", f"--cwd={repos['web']}", "--room=project-shop",
             f"--label=agent {i}"] for i in range(2)]
    lines = [json.dumps(runs[0]), '{"harness": "claude"}', json.dumps([*runs[0][:3], "--room=bad name"]),
             json.dumps(["--no-such-flag"]), json.dumps(runs[1])]
    res = run_cli("run-config", "--serve", input="\n".join(lines) + "\n")
    assert res.returncode == 0, res.stderr
    answers = [json.loads(line) for line in res.stdout.splitlines()]
    assert [a["code"] for a in answers] == [0, 2, 1, 2, 0]
    first, last = json.loads(answers[0]["out"]), json.loads(answers[4]["out"])
    assert first["session"] != last["session"] and Room.open(db).session_row(last["session"])["label"] == "agent 1"
    assert "one JSON array" in answers[1]["err"] and "invalid room name" in answers[2]["err"]
    assert answers[2]["out"] == "" and run_cli("run-config", "--serve", input="").stdout == ""


def test_a_runs_mcp_server_starts_as_a_file_and_answers_before_loading_more(tmp_path, repos, db):
    """A harness waits for its MCP servers before its first model request (issue 9): a run's entry
    starts the stdio front as a file — no package, CLI, argparse or runpy import before it answers."""
    cfg = _run_config("--harness=claude", f"--config-dir={tmp_path / 'r'}", f"--cwd={repos['web']}", cwd=repos["web"])
    entry = json.loads(open(cfg["files"][0]).read())["mcpServers"]["agents-room"]
    assert entry["args"][-1] == "--serve" and entry["args"][0] == "-S" and entry["args"][1].endswith("mcp_stdio.py")
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    p = subprocess.run([entry["command"], "-X", "importtime", *entry["args"]], input=json.dumps(hello) + "\n",
                       capture_output=True, text=True, timeout=60, env={**os.environ, **entry["env"]})
    assert json.loads(p.stdout)["result"]["serverInfo"]["name"] == "agents-room", p.stderr
    imported = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    # nor the json package (its `re` import was half of the front's start): json's C half does the work
    assert not imported & {"runpy", "argparse", "pathlib", "typing", "agents_room", "agents_room.cli", "site",
                           "json", "re", "enum"}, imported


def test_a_runs_mcp_server_started_without_site_loads_it_for_a_tool_call(tmp_path, repos, db):
    """The run's entry starts the front with -S (issue 30): the SDK lives in site-packages, so a
    tool call adds `site` first and then answers as the SDK server does."""
    cfg = _run_config("--harness=claude", f"--config-dir={tmp_path / 'r'}", f"--cwd={repos['web']}", cwd=repos["web"])
    entry = json.loads(open(cfg["files"][0]).read())["mcpServers"]["agents-room"]
    assert entry["args"][0] == "-S"
    calls = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
             {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "room_join", "arguments": {"cwd": str(repos["web"]), "label": "no-site"}}}]
    p = subprocess.run([entry["command"], *entry["args"]], input="".join(json.dumps(c) + "\n" for c in calls),
                       capture_output=True, text=True, timeout=120, cwd=repos["web"],
                       env={**os.environ, **entry["env"], **cfg["env"]})
    answers = [json.loads(line) for line in p.stdout.splitlines()]
    assert [a["id"] for a in answers] == [0, 1], p.stderr
    result = answers[1]["result"]
    assert not result.get("isError"), result
    assert "s-" in json.dumps(result), result  # the session id room_join returned


def test_a_platform_that_ends_the_session_gets_no_session_end_hook(tmp_path, repos, db):
    """`run-config --platform-ends-session` (issue 30): the platform ends the session it is handed
    once the run is over, so no SessionEnd hook process runs at the run's end; without the flag
    the hook is registered as before. A headless Codex run (which has no SessionEnd event) is
    joined ahead too and ended by the platform: before, its session was left to go stale."""
    common = [f"--cwd={repos['web']}", "--room=project-shop", "--label=agent"]
    ends = _run_config("--harness=claude", f"--config-dir={tmp_path / 'a'}", "--platform-ends-session", *common,
                       cwd=repos["web"])
    hooks = json.loads(open(ends["args"][ends["args"].index("--settings") + 1]).read())["hooks"]
    assert ends["platform_ends_session"] is True and ends["session"]
    assert "SessionEnd" not in hooks and {"PostToolUse", "Stop", "PreToolUse"} <= set(hooks)
    plain = _run_config("--harness=claude", f"--config-dir={tmp_path / 'b'}", *common, cwd=repos["web"])
    hooks = json.loads(open(plain["args"][plain["args"].index("--settings") + 1]).read())["hooks"]
    assert plain["platform_ends_session"] is False and "SessionEnd" in hooks
    codex = _run_config("--harness=codex", f"--config-dir={tmp_path / 'c'}", "--platform-ends-session", *common,
                        cwd=repos["web"])
    assert codex["platform_ends_session"] is True and codex["session"] and "hooks.SessionStart" not in json.dumps(codex)


def test_run_config_serve_ends_a_runs_session(tmp_path, repos, db):
    """`{"end": SESSION, "db": …}` on `run-config --serve` ends a run's session as its SessionEnd
    hook would (leases released, rooms kept for a resume); an ended one stays as it was; an unknown
    one or a bad request is an answer with a sentence, and the server goes on."""
    run = ["--harness=claude", f"--config-dir={tmp_path / 'r'}", f"--cwd={repos['web']}", "--room=project-shop",
           "--label=agent", "--platform-ends-session"]
    first = run_cli("run-config", *run, cwd=repos["web"])
    sid = json.loads(first.stdout)["session"]
    room = Room.open(db)
    room.lease_acquire(sid, ["src/**"], ttl=600)
    room.close()
    lines = [{"end": sid, "db": str(db)}, {"end": sid, "db": None}, {"end": "s-00000000", "db": str(db)},
             {"end": 7}, run]
    res = run_cli("run-config", "--serve", input="".join(json.dumps(x) + "\n" for x in lines))
    answers = [json.loads(line) for line in res.stdout.splitlines()]
    assert [a["code"] for a in answers] == [0, 0, 1, 2, 0], answers
    assert "s-00000000" in answers[2]["err"] and "Traceback" not in answers[2]["err"] and "{\"end\"" in answers[3]["err"]
    room = Room.open(db)
    row = room.session_row(sid)
    assert row["ended_at"] is not None
    assert room.conn.execute("SELECT count(*) FROM leases WHERE session_id=?", (sid,)).fetchone()[0] == 0
    assert room.conn.execute("SELECT count(*) FROM memberships WHERE session_id=?", (sid,)).fetchone()[0] == 2
    room.close()


def test_run_config_publishes_its_mcp_entry_and_leaves_it_to_a_platform_that_forwards_it(tmp_path, repos, db):
    """Issue 30: every answer carries the MCP entry and its tools manifest (`mcp`); with
    --platform-forwards-mcp (here through --serve) `args` hold no MCP server, for either harness,
    and the answer says so — the platform's own MCP server offers the tools and starts the entry."""
    def ask(harness: str, *flags: str) -> dict:
        args = [f"--harness={harness}", f"--config-dir={tmp_path / harness / str(len(flags))}",
                f"--cwd={repos['web']}", "--room=project-shop", *flags]
        res = run_cli("run-config", "--serve", input=json.dumps(args) + "\n")
        answer = json.loads(res.stdout)
        assert answer["code"] == 0, answer["err"]
        return json.loads(answer["out"])

    plain, forwarded = ask("claude"), ask("claude", "--platform-forwards-mcp")
    assert "--mcp-config" in plain["args"] and plain["platform_forwards_mcp"] is False
    assert "--mcp-config" not in forwarded["args"] and forwarded["platform_forwards_mcp"] is True
    assert forwarded["args"][0] == "--settings" and forwarded["files"] == [forwarded["args"][1]]
    entry = forwarded["mcp"]
    assert entry["name"] == "agents-room" and entry["args"][-1] == "--serve" and entry["env"]["AGENTS_ROOM_HARNESS"] == "claude"
    assert plain["mcp"]["command"] == entry["command"] and plain["mcp"]["args"] == entry["args"]
    listing = json.loads(open(entry["tools_file"], encoding="utf-8").read())
    assert {"msg_send", "msg_recv", "room_join"} <= {t["name"] for t in listing["tools"]}
    # what the entry starts answers tools/list with that manifest
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    out = subprocess.run([entry["command"], *entry["args"]], input=json.dumps(init) + "\n" + json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) + "\n", capture_output=True, text=True, timeout=60,
        env={**os.environ, **entry["env"]}).stdout.splitlines()
    assert json.loads(out[1])["result"]["tools"] == listing["tools"]
    codex = ask("codex", "--platform-forwards-mcp")
    assert not [a for a in codex["args"] if a.startswith("mcp_servers.")] and codex["platform_forwards_mcp"] is True
    assert "features.hooks=true" in codex["args"] and ask("codex")["mcp"]["env"]["AGENTS_ROOM_HARNESS"] == "codex"


def _serve_one(p: subprocess.Popen, request) -> dict:
    p.stdin.write(json.dumps(request) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())


def test_run_config_serve_keeps_the_store_warm_and_lets_a_replaced_one_be(tmp_path, repos, db):
    """`run-config --serve` opened the store twice a run (join, end), each time as its last
    connection: the open read the write-ahead log back and the close checkpointed and deleted it,
    most of the run's configuration CPU (issue 30). It keeps a read-only connection to the store
    now, so the log stays between runs; a store moved aside and made again at its path gets a new
    one, and neither store is harmed (a read-only connection never checkpoints or deletes)."""
    run = ["--harness=claude", f"--config-dir={tmp_path / 'r'}", f"--cwd={repos['web']}", "--room=project-shop",
           "--label=agent", "--platform-ends-session"]
    wal = db.with_name(db.name + "-wal")
    p = subprocess.Popen([PY, "-m", "agents_room", "run-config", "--serve"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        first = _serve_one(p, run)
        assert first["code"] == 0, first
        sid = json.loads(first["out"])["session"]
        assert _serve_one(p, {"end": sid, "db": None})["code"] == 0
        assert wal.exists()  # (no connection of the server's closed as the store's last)
        aside = tmp_path / "aside"
        aside.mkdir()
        for f in tmp_path.glob("room.db*"):
            f.rename(aside / f.name)
        second = _serve_one(p, run)
        assert second["code"] == 0, second
        assert _serve_one(p, {"end": json.loads(second["out"])["session"], "db": None})["code"] == 0
        assert wal.exists()
    finally:
        p.stdin.close()
        assert p.wait(timeout=30) == 0
        p.stdout.close()
    for store, session in ((db, json.loads(second["out"])["session"]), (aside / "room.db", sid)):
        room = Room.open(store)
        try:
            assert [r["id"] for r in room.conn.execute("SELECT id FROM sessions")] == [session]
            assert room.session_row(session)["ended_at"] is not None
            assert room.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            room.close()
