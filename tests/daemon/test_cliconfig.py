"""A sandboxed run's copy of its CLI's config (daemon/cliconfig.py, issue 29 finding 3)."""

from __future__ import annotations

from pathlib import Path

from predictorx.daemon import cliconfig


def _names(folder: Path) -> list[str]:
    """What a run's copy holds, at its top."""
    return sorted(p.name for p in folder.iterdir())


def _claude_home(home: Path) -> None:
    (home / ".claude" / "projects" / "-person-repo").mkdir(parents=True)
    (home / ".claude" / "projects" / "-person-repo" / "s1.jsonl").write_text("the person's session")
    (home / ".claude" / "settings.json").write_text("{}")
    (home / ".claude" / ".credentials.json").write_text('{"refresh": "r1"}')
    (home / ".claude.json").write_text('{"numStartups": 3}')
    (home / ".claude" / "plugins" / "tool").mkdir(parents=True)
    (home / ".claude" / "plans").mkdir()  # the person's plan-mode plans, and copies of their ~/.claude.json
    (home / ".claude" / "plans" / "quiet-river.md").write_text("the person's plan")
    (home / ".claude" / "backups").mkdir()
    (home / ".claude" / "backups" / ".claude.json.backup.1").write_text("{}")


def test_the_copy_leaves_out_the_persons_sessions_locks_settings_and_keeps_the_agents(tmp_path: Path) -> None:
    home, sessions = tmp_path / "home", tmp_path / "sessions"
    _claude_home(home)
    overlays = cliconfig.prepare("claude", home, {}, tmp_path / "run1", sessions)
    mounts = {target: (source, how) for source, target, how in overlays}
    copy, _ = mounts[home / ".claude"]
    assert copy == tmp_path / "run1" / "claude" and not (copy / "projects" / "-person-repo").exists()
    assert not (copy / "plans").exists() and not (copy / "backups").exists()
    assert mounts[home / ".claude" / "settings.json"] == (copy / "settings.json", cliconfig.READ_ONLY)
    assert mounts[home / ".claude" / "projects"] == (sessions / "claude" / "projects", cliconfig.WRITABLE)
    assert mounts[home / ".claude" / ".credentials.json"] == (home / ".claude" / ".credentials.json",
                                                             cliconfig.WRITABLE)
    assert not (copy / ".credentials.json").exists()
    # ~/.claude.json, which Claude Code rewrites all along: a copy in the sandbox's own memory,
    # read from the person's file as the sandbox starts (its writes end with the run).
    assert mounts[home / ".claude.json"] == (home / ".claude.json", cliconfig.IN_MEMORY)
    # Plugins are only read by the CLI: the person's own, read-only, never copied.
    assert mounts[home / ".claude" / "plugins"] == (home / ".claude" / "plugins", cliconfig.READ_ONLY)
    assert not (copy / "plugins").exists()
    # The agent's session of run 1 is there for run 2 (a resume); the person's files never moved.
    (sessions / "claude" / "projects" / "s2.jsonl").write_text("the agent's session")
    again = {t: s for s, t, _ in cliconfig.prepare("claude", home, {}, tmp_path / "run2", sessions)}
    assert (again[home / ".claude" / "projects"] / "s2.jsonl").read_text() == "the agent's session"
    assert (home / ".claude" / "projects" / "-person-repo" / "s1.jsonl").read_text() == "the person's session"


def test_the_places_follow_the_cli_environment_variables(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"CODEX_HOME": str(tmp_path / "codex-home"), "XDG_DATA_HOME": str(tmp_path / "data")}
    assert cliconfig.places("codex", home, env) == [tmp_path / "codex-home"]
    assert cliconfig.places("opencode", home, env) == [home / ".config/opencode", tmp_path / "data" / "opencode",
                                                       home / ".local/state/opencode"]
    assert cliconfig.places("command", home, env) == []
    # A CLI the person never set up still gets a folder of its own (it writes its first config there).
    overlays = cliconfig.prepare("gemini", home, env, tmp_path / "run", tmp_path / "sessions")
    assert (tmp_path / "run" / "gemini", home / ".gemini", cliconfig.WRITABLE) in overlays


def test_codex_databases_of_the_persons_threads_stay_out_of_the_runs_copy(tmp_path: Path) -> None:
    """Codex 0.169 keeps the person's conversations in SQLite beside its config (thread_history_1,
    logs_2, memories_1, state_5, goals_1 and their -wal/-shm): copied into every sandboxed run's
    config, the agent could read the person's whole Codex history (as history.jsonl, which was
    already left out). The run's Codex makes its own, from the agent's kept sessions."""
    home = tmp_path / "home"
    codex = home / ".codex"
    codex.mkdir(parents=True)
    (codex / "config.toml").write_text('model = "m"\n')
    for name in ("thread_history_1.sqlite", "thread_history_1.sqlite-wal", "logs_2.sqlite", "logs_2.sqlite-shm",
                 "memories_1.sqlite", "state_5.sqlite", "goals_1.sqlite"):
        (codex / name).write_text("the person's threads")
    cliconfig.prepare("codex", home, {}, tmp_path / "run", tmp_path / "sessions")
    assert _names(tmp_path / "run" / "codex") == ["config.toml"]


def test_copilot_session_store_of_the_persons_turns_stays_out_of_the_runs_copy(tmp_path: Path) -> None:
    """GitHub Copilot CLI 1.0.102 keeps the person's sessions and turns (with a full-text index) in
    ~/.copilot/session-store.db: left out of the run's copy, as its logs are."""
    home = tmp_path / "home"
    (home / ".copilot").mkdir(parents=True)
    (home / ".copilot" / "config.json").write_text("{}")
    for name in ("session-store.db", "session-store.db-wal", "session-store.db-shm"):
        (home / ".copilot" / name).write_text("the person's turns")
    cliconfig.prepare("copilot", home, {}, tmp_path / "run", tmp_path / "sessions")
    assert _names(tmp_path / "run" / "copilot") == ["config.json"]


def test_what_the_person_typed_into_copilot_opencode_and_kilo_stays_out_of_the_runs_copy(tmp_path: Path) -> None:
    """Copilot CLI keeps every prompt the person typed in ~/.copilot/command-history-state.json;
    OpenCode and Kilo keep their TUI's prompt history, stashed drafts and the files the person opened
    in their state dir (prompt-history.jsonl, prompt-stash.jsonl, frecency.jsonl — read off both
    pinned binaries). Copied into a sandboxed run, the agent could read them, as it could Claude
    Code's and Codex's history.jsonl before those were left out."""
    home = tmp_path / "home"
    (home / ".copilot").mkdir(parents=True)
    (home / ".copilot" / "config.json").write_text("{}")
    (home / ".copilot" / "command-history-state.json").write_text('{"commandHistory": ["deploy with key sk-1"]}')
    for cli in ("opencode", "kilo"):
        state = home / ".local" / "state" / cli
        state.mkdir(parents=True)
        (state / "model.json").write_text("{}")
        for name in ("prompt-history.jsonl", "prompt-stash.jsonl", "frecency.jsonl"):
            (state / name).write_text("what the person typed")
    cliconfig.prepare("copilot", home, {}, tmp_path / "run", tmp_path / "sessions")
    assert _names(tmp_path / "run" / "copilot") == ["config.json"]
    for cli in ("opencode", "kilo"):
        overlays = cliconfig.prepare(cli, home, {}, tmp_path / cli, tmp_path / "sessions")
        copy = next(source for source, target, _ in overlays if target == home / ".local" / "state" / cli)
        assert _names(copy) == ["model.json"], cli


def test_gemini_browser_profile_and_qwen_edit_history_stay_out_of_the_runs_copy(tmp_path: Path) -> None:
    """Gemini CLI's browser agent keeps its browser profile (the person's cookies and logins) in
    ~/.gemini/cli-browser-profile; Qwen Code keeps copies of the files the person's sessions edited
    (file-history), their worktrees, chat channels with credentials and a usage record in ~/.qwen."""
    home = tmp_path / "home"
    (home / ".gemini" / "cli-browser-profile" / "Default").mkdir(parents=True)
    (home / ".gemini" / "cli-browser-profile" / "Default" / "Cookies").write_text("the person's cookies")
    (home / ".gemini" / "settings.json").write_text("{}")
    qwen = home / ".qwen"
    for folder in ("file-history/s1", "worktrees/w1", "channels", "arena", "artifacts", "sessions", "teams/t1",
                   "tasks/t1", "boards"):
        (qwen / folder).mkdir(parents=True)
    (qwen / "file-history" / "s1" / "main.py").write_text("the person's code")
    (qwen / "channels" / "weixin-credentials.json").write_text('{"token": "t1"}')
    (qwen / "usage_record.jsonl").write_text("{}")
    (qwen / "settings.json").write_text("{}")
    cliconfig.prepare("gemini", home, {}, tmp_path / "run", tmp_path / "sessions")
    assert _names(tmp_path / "run" / "gemini") == ["settings.json"]
    cliconfig.prepare("qwen", home, {}, tmp_path / "run", tmp_path / "sessions")
    assert _names(tmp_path / "run" / "qwen") == ["settings.json"]


def test_cline_reports_of_the_persons_scheduled_runs_and_its_connectors_stay_out_of_the_runs_copy(
        tmp_path: Path) -> None:
    """Cline (@cline/shared's storage paths) keeps the reports and events of the person's scheduled
    runs under ~/.cline/cron, their agent teams' state under data/teams and their chat connectors'
    data under data/connectors: none of it is the run's; its settings are."""
    home = tmp_path / "home"
    cline = home / ".cline"
    for folder in ("cron/reports", "data/teams", "data/connectors/slack", "data/settings"):
        (cline / folder).mkdir(parents=True)
    (cline / "cron" / "reports" / "nightly.md").write_text("what the person's scheduled run did")
    (cline / "data" / "connectors" / "slack" / "state.json").write_text('{"token": "xoxb-1"}')
    (cline / "data" / "settings" / "providers.json").write_text("{}")
    (cline / "config.json").write_text("{}")
    overlays = cliconfig.prepare("cline", home, {}, tmp_path / "run", tmp_path / "sessions")
    copies = {target: source for source, target, _ in overlays}
    assert _names(copies[cline]) == ["config.json"]
    assert _names(copies[cline / "data"]) == ["settings"]


def test_gptme_snapshots_of_the_persons_other_workspaces_stay_out_of_the_runs_copy(tmp_path: Path) -> None:
    """gptme keeps git snapshots of the workspaces the person ran it in (their code) under its state
    dir, workspace-snapshots/<fingerprint>.git; the run's copy of that dir leaves them out."""
    home = tmp_path / "home"
    state = home / ".local" / "state" / "gptme"
    (state / "workspace-snapshots" / "abc.git").mkdir(parents=True)
    (state / "workspace-snapshots" / "abc.git" / "HEAD").write_text("ref: refs/heads/main")
    (state / "checkpoint.json").write_text("{}")
    overlays = cliconfig.prepare("gptme", home, {}, tmp_path / "run", tmp_path / "sessions")
    copy = next(source for source, target, _ in overlays if target == state)
    assert _names(copy) == ["checkpoint.json"]


def test_mistral_vibe_plans_and_worktrees_of_the_person_stay_out_and_its_hooks_are_locked(tmp_path: Path) -> None:
    """Mistral Vibe keeps the person's plans and git worktrees of their repositories under ~/.vibe;
    its hooks.toml, like its config.toml, is read-only on top of the run's copy."""
    home = tmp_path / "home"
    vibe = home / ".vibe"
    (vibe / "plans").mkdir(parents=True)
    (vibe / "plans" / "p.md").write_text("the person's plan")
    (vibe / "worktrees" / "repo" / ".git").mkdir(parents=True)
    (vibe / "config.toml").write_text("")
    (vibe / "hooks.toml").write_text("")
    overlays = cliconfig.prepare("vibe", home, {}, tmp_path / "run", tmp_path / "sessions")
    mounts = {target: (source, how) for source, target, how in overlays}
    copy, _ = mounts[vibe]
    assert _names(copy) == ["config.toml", "hooks.toml"]
    assert mounts[vibe / "hooks.toml"] == (copy / "hooks.toml", cliconfig.READ_ONLY)
