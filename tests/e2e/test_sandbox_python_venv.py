"""An agent CLI installed as a Python console script in a venv of its own (pipx, `uv tool`, the
real-CLI tests' gptme and Mistral Vibe) runs in the sandbox: its venv's site-packages and its base
interpreter are mounted with it, not only the script's folder (real bwrap, no daemon)."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from predictorx.daemon import sandbox


def make_agent(tmp_path: Path) -> Path:
    """A venv (this interpreter as its base) with a package and a console script that imports it."""
    root = tmp_path / "tools" / "agent-venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    site = next((root / "lib").glob("python3*/site-packages"))
    (site / "fixture_agent").mkdir()
    (site / "fixture_agent" / "__init__.py").write_text("def main():\n    print('agent ran in', __file__)\n")
    script = root / "bin" / "fixture-agent"
    script.write_text(f"#!{root / 'bin' / 'python'}\nimport fixture_agent\nfixture_agent.main()\n")
    script.chmod(0o755)
    return script


def test_a_console_script_in_a_venv_runs_with_its_site_packages_and_base_interpreter(tmp_path):
    if sandbox.bwrap_executable() is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    script = make_agent(tmp_path)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    plan = sandbox.SandboxPlan(bwrap=sandbox.bwrap_executable(), provider="acp", writable=[work], home=home,
                               chdir=work, seccomp=sandbox.write_filter(tmp_path))
    # The agent is found on PATH, as a profile's executable is; nothing else of the venv is named.
    env = {"PATH": f"{script.parent}:/usr/bin:/bin", "HOME": str(home)}
    out = subprocess.run(plan(["fixture-agent"], env), env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "agent ran in " + str(script.parents[1]) in out.stdout


def test_what_a_venv_adds_is_its_root_and_its_base_prefix(tmp_path):
    script = make_agent(tmp_path)
    paths = sandbox.python_env(script)
    assert paths[0] == script.parents[1]
    assert Path(os.path.realpath(sys.base_prefix)) in [Path(os.path.realpath(p)) for p in paths[1:]]
    # A script outside a venv (node_modules/.bin, /usr/bin) adds nothing.
    plain = tmp_path / "bin" / "tool"
    plain.parent.mkdir()
    plain.write_text("#!/bin/sh\n")
    assert sandbox.python_env(plain) == []
