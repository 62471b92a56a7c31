"""The Python-packaged agents' launch profiles (gptme, Mistral Vibe, fast-agent): found by their
executable wherever it is installed (a pipx or `uv tool` venv), started with what they need, and
their config dirs prepared for the sandbox (the real CLIs: tests/realcli/test_acp_python.py)."""

from __future__ import annotations

from pathlib import Path

from predictorx.agentconfig import acp_profiles
from predictorx.agents import RunSpec, get
from predictorx.daemon import cliconfig


def spec(argv: list[str], **kwargs) -> RunSpec:
    return RunSpec(prompt="p", cwd=Path("/tmp"), env={}, logs_dir=Path("/tmp"), argv_override=argv, **kwargs)


def test_each_is_found_by_its_executable_and_started_with_its_settings():
    assert acp_profiles.for_command(["/home/me/.local/bin/vibe-acp"]).name == "vibe"
    assert acp_profiles.for_command(["/opt/pipx/venvs/gptme/bin/gptme-acp"]).name == "gptme"
    assert acp_profiles.for_command(["fast-agent-acp", "--shell"]).name == "fast-agent"
    adapter = get("acp")
    # fast-agent takes its model as a flag (PROVIDER.MODEL); its shell comes with the profile.
    fast = spec(acp_profiles.get("fast-agent").command(), model="generic.ours")
    assert adapter.build_argv(fast) == ["fast-agent-acp", "--shell", "--model", "generic.ours"]
    # gptme's tiktoken fetch is off unless the daemon's environment says otherwise.
    gptme = spec(acp_profiles.get("gptme").command())
    assert adapter.build_env(gptme)["GPTME_TIKTOKEN_TIMEOUT"] == "0"
    assert adapter.config_provider(["vibe-acp"]) == "vibe" and adapter.config_provider(["gptme-acp"]) == "gptme"


def test_their_config_dirs_are_the_runs_copy_with_settings_read_only_and_sessions_kept(tmp_path):
    home = tmp_path / "home"
    (home / ".vibe" / "logs" / "session").mkdir(parents=True)
    (home / ".vibe" / "config.toml").write_text('active_model = "ours"\n')
    (home / ".vibe" / "vibehistory").write_text("a person's own prompts\n")
    (home / ".config" / "gptme").mkdir(parents=True)
    (home / ".config" / "gptme" / "config.toml").write_text("[env]\n")
    vibe = cliconfig.prepare("vibe", home, {}, tmp_path / "run", tmp_path / "sessions")
    read_only = {str(target.relative_to(home)) for _source, target, how in vibe if how == cliconfig.READ_ONLY}
    assert read_only == {".vibe/config.toml"}
    assert not (tmp_path / "run" / "vibe" / "vibehistory").exists()  # the person's history stays theirs
    assert (tmp_path / "sessions" / "vibe" / "logs", home / ".vibe" / "logs", cliconfig.WRITABLE) in vibe
    # VIBE_HOME moves it, as it moves Vibe.
    assert cliconfig.places("vibe", home, {"VIBE_HOME": str(tmp_path / "vh")}) == [tmp_path / "vh"]
    gptme = cliconfig.prepare("gptme", home, {}, tmp_path / "run2", tmp_path / "sessions2")
    assert (tmp_path / "sessions2" / "gptme-data", home / ".local/share/gptme", cliconfig.WRITABLE) in gptme
    assert any(how == cliconfig.READ_ONLY and target == home / ".config/gptme/config.toml" for _s, target, how in gptme)
