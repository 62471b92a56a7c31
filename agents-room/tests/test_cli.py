"""The command for people, and ``install`` (R-ROOM-13, R-ROOM-14)."""

import json
import tomllib

import pytest

from agents_room.install import install, merge_codex_config
from agents_room.room import Room

from room_helpers import run_cli


def test_no_subcommand_prints_usage_to_stderr_and_fails():
    res = run_cli()
    assert res.returncode != 0 and res.stdout == "" and "usage: agents-room" in res.stderr


def test_people_commands_end_to_end(db, repos):
    a = json.loads(run_cli("join", "--room", "storefront", "--label", "alice", "--json", cwd=repos["api"]).stdout)
    b = json.loads(run_cli("join", "--room", "shared:storefront", "--label", "bob", "--json", cwd=repos["web"]).stdout)
    A, B = a["session"], b["session"]
    res = run_cli("send", "--session", A, "--to", "*", "hello", "bob")
    assert res.returncode == 0 and "1 recipient" in res.stdout
    zero = run_cli("send", "--session", A, "--to", "tag:nobody", "anyone")
    assert "0 recipient" in zero.stdout and "note:" in zero.stdout
    recv = run_cli("recv", "--session", B)
    assert "hello bob" in recv.stdout and "shared:storefront" in recv.stdout
    assert "caught up" in run_cli("recv", "--session", B).stdout
    assert "read" in run_cli("sent", "--session", A).stdout
    assert "hello bob" in run_cli("history", "--session", B, "--room", "storefront").stdout
    who = json.loads(run_cli("who", "--json").stdout)
    assert {s["label"] for s in who["sessions"]} == {"alice", "bob"}
    table = run_cli("who").stdout
    assert table.splitlines()[0].startswith("SESSION") and "alice" in table
    bad = run_cli("recv", "--session", A[:-1] + "x")
    assert bad.returncode == 1 and "did you mean" in bad.stderr
    assert run_cli("leave", "--session", B, "--room", "storefront").returncode == 0


def test_watch_follows_new_messages(db, repos):
    r = Room.open(db)
    a = r.join(cwd=str(repos["api"]), rooms=["w"])["session"]
    r.send(a, "*", "before")
    import subprocess, sys, time
    p = subprocess.Popen([sys.executable, "-m", "agents_room", "watch", "--room", "w", "--interval", "0.05", "--timeout", "20"],
                         stdout=subprocess.PIPE, text=True)
    # watch prints its header once it has taken its starting point: only then is "after" new to it
    assert p.stdout.readline().startswith("watching shared:w")
    r.send(a, "*", "after")
    lines = []
    deadline = time.monotonic() + 20
    while not any("after" in line for line in lines) and time.monotonic() < deadline:
        lines.append(p.stdout.readline())
    p.kill()
    p.wait(timeout=10)
    assert any("after" in line for line in lines) and not any("before" in line for line in lines)


def test_doctor_and_prune_json(db, repos):
    r = Room.open(db)
    r.join(cwd=str(repos["api"]))
    rep = json.loads(run_cli("doctor", "--json").stdout)
    assert rep["integrity"] == "ok" and rep["schema_version"]["found"] == rep["schema_version"]["expected"]
    pr = json.loads(run_cli("prune", "--dry-run", "--json").stdout)
    assert pr["dry_run"] is True
    legacy = r.conn.execute("INSERT INTO rooms(name, created_at) VALUES ('shop', 1)").lastrowid
    s = r.join(cwd=str(repos["web"]), rooms=["shop"])["session"]
    r.conn.execute("INSERT INTO memberships VALUES (?, ?, 1)", (s, legacy))
    text = run_cli("doctor").stdout
    assert f"agents-room leave --session {s} --room shop" in text and f"agents-room join --session {s} --room shared:shop" in text


# ---- install ------------------------------------------------------------------------

def test_install_claude_user_scope_merges(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude.json").write_text(json.dumps({"numStartups": 7, "mcpServers": {"other": {"command": "x"}}}))
    (home / ".claude" / "settings.json").write_text(json.dumps({
        "model": "opus",
        "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}]},
    }))
    install("claude", home=home, autonomy="wake")
    install("claude", home=home, autonomy="wake")  # idempotent: no duplicate handlers
    cfg = json.loads((home / ".claude.json").read_text())
    assert cfg["numStartups"] == 7 and cfg["mcpServers"]["other"] == {"command": "x"}
    entry = cfg["mcpServers"]["agents-room"]
    assert entry["type"] == "stdio" and entry["args"][-1] == "mcp"
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus"
    post = settings["hooks"]["PostToolUse"]
    assert post[0]["hooks"][0]["command"] == "my-linter"
    ours = [h for g in post for h in g["hooks"] if "agents_room hook" in h["command"]]
    assert len(ours) == 1
    stop = [h for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    assert any(h.get("asyncRewake") and "--wake" in h["command"] for h in stop)
    assert set(settings["hooks"]) >= {"SessionStart", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"}
    assert (home / ".claude" / "settings.json.bak").exists()


def test_install_claude_project_scope(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    res = install("claude", scope="project", project_dir=str(proj), autonomy="hold", home=tmp_path / "home")
    assert json.loads((proj / ".mcp.json").read_text())["mcpServers"]["agents-room"]
    settings = json.loads((proj / ".claude" / "settings.json").read_text())
    assert not any("--wake" in h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"])
    assert "--autonomy=hold" in settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert res["written"]


def test_install_refuses_to_clobber_broken_json(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{not json")
    with pytest.raises(ValueError, match="will not overwrite"):
        install("claude", home=home)
    assert (home / ".claude" / "settings.json").read_text() == "{not json"


def test_install_codex_merges_config_toml_and_hooks(tmp_path):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    original = (
        'model = "gpt-5-codex"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n\n'
        '[mcp_servers.agents-room]\ncommand = "old"\n\n[mcp_servers.agents-room.env]\nX = "1"\n\n'
        '[profiles.fast]\nmodel = "o4-mini"\n'
    )
    (home / ".codex" / "config.toml").write_text(original)
    res = install("codex", home=home)
    install("codex", home=home)
    cfg = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert cfg["model"] == "gpt-5-codex" and cfg["mcp_servers"]["docs"] == {"command": "docs-mcp"}
    assert cfg["profiles"]["fast"]["model"] == "o4-mini"
    ours = cfg["mcp_servers"]["agents-room"]
    assert ours["args"][-1] == "mcp" and ours["env"] == {"AGENTS_ROOM_HARNESS": "codex"}
    assert cfg["features"]["hooks"] is True and "codex_hooks" not in cfg["features"]  # issue 9: the deprecated name ran no hook
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "PreToolUse", "PostToolUse", "Stop"}
    assert sum("agents_room hook" in h["command"] for g in hooks["Stop"] for h in g["hooks"]) == 1
    assert res["notes"]  # wake acts as hold on Codex, and it says so


def test_codex_config_keeps_existing_features_and_refuses_broken():
    text = "[features]\nweb_search = true\n"
    out = tomllib.loads(merge_codex_config(text, {"command": "c", "args": ["mcp"], "env": {}}))
    assert out["features"] == {"web_search": True, "hooks": True}
    # a config that only has the deprecated name gets the one Codex 0.169 reads (issue 9)
    old = tomllib.loads(merge_codex_config("[features]\ncodex_hooks = true\n", {"command": "c", "args": ["mcp"], "env": {}}))
    assert old["features"] == {"codex_hooks": True, "hooks": True}
    with pytest.raises(ValueError):
        merge_codex_config("[broken", {"command": "c", "args": [], "env": {}})


def test_install_cli(tmp_path):
    res = run_cli("install", "claude", "--dry-run")
    assert res.returncode == 0 and "dry run" in res.stdout


@pytest.mark.parametrize("argv", [
    ["hook", "--event=Stop"],
    ["hook", "--event", "PostToolUse", "--harness", "codex", "--autonomy=2", "--room=a", "--room", "b", "--label=x y"],
    ["--db=/tmp/x.db", "hook", "--event=Stop", "--wake", "--wake-timeout=5", "--wake-interval", "0.1"],
    ["hook", "--event=PostToolUse", "--reads-only"],
])
def test_fast_hook_args_match_argparse(argv):
    from agents_room.cli import _parser
    from agents_room.hooks import parse_args

    fast = parse_args(argv)
    ns = _parser().parse_args(argv)
    assert fast == {"event": ns.event, "harness": ns.harness, "autonomy": ns.autonomy, "rooms": ns.room,
                    "label": ns.label, "wake": ns.wake, "wake_timeout": ns.wake_timeout,
                    "wake_interval": ns.wake_interval, "db": ns.db, "reads_only": ns.reads_only}


@pytest.mark.parametrize("argv", [
    ["hook"], ["hook", "--event=Nope"], ["hook", "--event=Stop", "--harness=gemini"], ["hook", "--event=Stop", "--bogus"],
    ["hook", "--event=Stop", "--db=/x"], ["hook", "--event"],
])
def test_fast_hook_args_defer_unusual_input_to_argparse(argv):
    from agents_room.hooks import parse_args

    assert parse_args(argv) is None


def test_the_two_commands_doctor_names_mend_the_split(db, repos):
    r = Room.open(db)
    legacy = r.conn.execute("INSERT INTO rooms(name, created_at) VALUES ('shop', 1)").lastrowid
    s = r.join(cwd=str(repos["web"]), rooms=["shop"])["session"]  # in shared:shop
    old = r.join(cwd=str(repos["api"]))["session"]
    r.conn.execute("INSERT INTO memberships VALUES (?, ?, 1)", (old, legacy))
    split = json.loads(run_cli("doctor", "--json").stdout)["split_rooms"]
    assert split[0]["sessions"] == [old]
    for cmd in split[0]["fix"][0]:
        res = run_cli(*cmd.split()[1:])
        assert res.returncode == 0, res.stderr
    rep = json.loads(run_cli("doctor", "--json").stdout)
    assert rep["split_rooms"] == [] and rep["legacy_room_names"] == [{"room": "shared:shop", "old_name": "shop"}]
    assert r.send(s, "*", "together")["recipient_ids"] == [old]


def test_cli_rejoin_with_session_from_another_repo_stays_put(db, repos):
    a = json.loads(run_cli("join", "--room", "old", "--json", cwd=repos["api"]).stdout)
    res = run_cli("join", "--session", a["session"], "--room", "canon", "--json", cwd=repos["web"])
    assert res.returncode == 0, res.stderr
    again = json.loads(res.stdout)
    assert again["repo"] == "repo:api"
    assert again["rooms"] == ["repo:api", "shared:canon", "shared:old"]


ENTRY = {"command": "c", "args": ["mcp"], "env": {}}


def test_codex_config_merge_that_would_lose_settings_is_a_value_error():
    # a server whose quoted name begins with ours would be dropped with our table: refused, not asserted
    text = '[mcp_servers."agents-room.old"]\ncommand = "keep-me"\n'
    with pytest.raises(ValueError, match=r"would change mcp_servers\.agents-room\.old.*by hand"):
        merge_codex_config(text, ENTRY)
    # features as an inline table: the merged text would not parse
    with pytest.raises(ValueError, match="would not give valid TOML"):
        merge_codex_config('features = { web_search = true }\n', ENTRY)


def test_install_cli_reports_a_refused_merge_in_one_line(tmp_path):
    codex = tmp_path / "codex-home"
    codex.mkdir()
    original = '[mcp_servers."agents-room.old"]\ncommand = "keep-me"\n'
    (codex / "config.toml").write_text(original)
    res = run_cli("install", "codex", env={"CODEX_HOME": str(codex)})
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agents-room install: merging agents-room into ")
    assert "Traceback" not in res.stderr and "AssertionError" not in res.stderr
    assert (codex / "config.toml").read_text() == original and not (codex / "hooks.json").exists()
