"""How each adapter launches its CLI (argv, stdin, env), the registry, and probing versions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from predictorx import agents, plugins
from predictorx.agents import AgentAdapter, RunSpec, UnknownProvider, get, known_providers, registry
from predictorx.agents.codex import MAX_PROMPT_ARG_BYTES

from .conftest import FAKES_DIR


def spec(**kwargs) -> RunSpec:
    return RunSpec(
        prompt=kwargs.pop("prompt", "do it"), cwd=Path("/w"), env=kwargs.pop("env", {}), logs_dir=Path("/tmp/unused"), **kwargs
    )


def test_claude_argv_and_prompt_on_stdin():
    adapter = get("claude")
    argv = adapter.build_argv(spec(model="opus", resume_session_id="s-1", extra_args=["--max-turns", "9"]))
    assert argv[:5] == ["claude", "-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--model") + 1] == "opus"
    assert argv[argv.index("--resume") + 1] == "s-1"
    assert argv[-2:] == ["--max-turns", "9"]
    assert "do it" not in argv
    assert adapter.stdin_payload(spec()) == b"do it"


def test_every_adapter_pins_its_working_directory_in_pwd(monkeypatch):
    """OpenCode works in the inherited PWD: the daemon's own folder, unless the adapter pins it (R-EX-9)."""
    monkeypatch.setenv("PWD", "/where/the/daemon/started")
    for provider in known_providers():
        assert get(provider).build_env(spec())["PWD"] == "/w", provider


def test_claude_does_not_pass_on_the_nested_session_marker(monkeypatch):
    monkeypatch.setenv("CLAUDECODE", "1")
    env = get("claude").build_env(spec(env={"PREDICTORX_TOKEN": "t"}))
    assert "CLAUDECODE" not in env and env["PREDICTORX_TOKEN"] == "t"


def test_codex_prompt_is_an_argument_and_stdin_is_closed():
    adapter = get("codex")
    argv = adapter.build_argv(spec(model="gpt-5-codex"))
    assert argv[:3] == ["codex", "exec", "--json"]
    assert argv[-1] == "do it"
    assert adapter.stdin_payload(spec()) is None  # /dev/null


def test_codex_runs_the_hooks_it_is_given_without_a_persons_trust():
    """Codex 0.169 skips untrusted hooks: the daemon's agents-room hooks never ran (issue 9)."""
    adapter = get("codex")
    assert "--dangerously-bypass-hook-trust" not in adapter.build_argv(spec())
    argv = adapter.build_argv(spec(extra_args=["-c", "features.hooks=true", "-c", "hooks.SessionStart=[]"]))
    assert argv.index("--dangerously-bypass-hook-trust") < argv.index("-c")
    # agents-room's run-config already passes the flag: Codex refuses it twice ("cannot be used
    # multiple times") and every Codex run failed with exit 2.
    given = ["--dangerously-bypass-hook-trust", "-c", "features.hooks=true", "-c", "hooks.SessionStart=[]"]
    assert adapter.build_argv(spec(extra_args=given)).count("--dangerously-bypass-hook-trust") == 1


def test_codex_resume_and_long_or_dashed_prompts_go_through_stdin():
    adapter = get("codex")
    assert adapter.build_argv(spec(resume_session_id="th-1"))[-3:] == ["resume", "th-1", "do it"]
    long = spec(prompt="y" * (MAX_PROMPT_ARG_BYTES + 1))
    assert adapter.build_argv(long)[-1] == "-"
    assert adapter.stdin_payload(long) == b"y" * (MAX_PROMPT_ARG_BYTES + 1)
    assert adapter.build_argv(spec(prompt="--not-a-flag"))[-1] == "-"


def test_gemini_and_opencode_argv():
    gemini = get("gemini").build_argv(spec(model="gemini-2.5-pro", resume_session_id="g-1"))
    assert gemini[:3] == ["gemini", "--output-format", "stream-json"] and "--yolo" in gemini
    assert gemini[gemini.index("--resume") + 1] == "g-1"
    opencode = get("opencode").build_argv(spec(model="anthropic/claude", resume_session_id="ses_1"))
    assert opencode == ["opencode", "run", "--format", "json", "--dir", "/w", "--model", "anthropic/claude",
                        "--session", "ses_1"]
    assert get("opencode").stdin_payload(spec()) == b"do it"


def test_opencode_runs_stay_off_the_network_unless_the_daemon_says_otherwise(monkeypatch):
    """Plugins from the npm registry, update checks, the models.dev catalogue, language servers:
    off for every run (the real CLI's run is checked against a tripwire proxy in tests/realcli)."""
    for key in ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH",
                "OPENCODE_DISABLE_LSP_DOWNLOAD"):
        monkeypatch.delenv(key, raising=False)
    env = get("opencode").build_env(spec())
    assert {k: env[k] for k in env if k.startswith("OPENCODE_DISABLE_")} == {
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"}
    monkeypatch.setenv("OPENCODE_DISABLE_MODELS_FETCH", "0")  # a person who wants the live catalogue
    assert get("opencode").build_env(spec())["OPENCODE_DISABLE_MODELS_FETCH"] == "0"
    assert "OPENCODE_DISABLE_DEFAULT_PLUGINS" not in get("gemini").build_env(spec())


def test_argv_override_replaces_the_executable_only():
    argv = get("claude").build_argv(spec(argv_override=["node", "/opt/claude/cli.js"]))
    assert argv[:3] == ["node", "/opt/claude/cli.js", "-p"]


def test_command_needs_a_command_line():
    adapter = get("command")
    with pytest.raises(ValueError, match="needs a command line"):
        adapter.build_argv(spec())
    assert adapter.build_argv(spec(argv_override=["./agent.sh", "-v"], extra_args=["x"])) == ["./agent.sh", "-v", "x"]


def test_command_prompt_in_env_and_file(tmp_path):
    s = RunSpec(prompt="hello", cwd=tmp_path, env={}, logs_dir=tmp_path / "logs", argv_override=["true"])
    env = get("command").build_env(s)
    assert env["PREDICTORX_PROMPT"] == "hello"
    assert Path(env["PREDICTORX_PROMPT_FILE"]).read_text() == "hello"


def test_instruction_files():
    assert {p: get(p).instruction_file for p in known_providers()} == {
        "claude": "CLAUDE.md", "codex": "AGENTS.md", "gemini": "GEMINI.md", "opencode": "AGENTS.md", "command": "AGENTS.md",
        "acp": "AGENTS.md",  # a profile's CLI may read another (config_provider): GEMINI.md for Gemini CLI
    }


def test_unknown_provider_names_the_known_ones():
    with pytest.raises(UnknownProvider) as err:
        get("cursor")
    assert "claude, codex, command, gemini, opencode" in str(err.value)


def test_plugins_register_through_entry_points(monkeypatch):
    class AiderAdapter(AgentAdapter):
        provider = "aider"
        executable = "aider"

    class EntryPoint:
        def load(self):
            return AiderAdapter

    monkeypatch.setattr(registry.ADAPTERS, "loaded", False)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [EntryPoint()] if group == registry.ENTRY_POINT_GROUP else [])
    try:
        assert "aider" in known_providers()
        assert isinstance(get("aider"), AiderAdapter)
    finally:
        agents.unregister("aider")


@pytest.mark.parametrize(("provider", "version"), [
    ("claude", "2.0.14 (Claude Code)"), ("codex", "codex-cli 0.50.0"), ("gemini", "0.12.0"), ("opencode", "1.0.20"),
])
def test_probe_reports_the_version(provider, version, monkeypatch):
    adapter = get(provider)
    assert adapter.probe(str(FAKES_DIR / provider)) == version
    monkeypatch.setenv("PATH", os.pathsep.join([str(FAKES_DIR), os.environ["PATH"]]))
    assert adapter.locate() == str(FAKES_DIR / provider)
    assert adapter.probe() == version


def test_probe_of_a_missing_or_broken_executable_is_none(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert get("claude").probe() is None
    broken = tmp_path / "claude"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    assert get("claude").probe() is None


def test_command_is_always_available():
    assert get("command").probe().startswith("predictorx")
