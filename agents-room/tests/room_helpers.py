"""Helpers the tests import by name (``conftest`` is ambiguous beside Predictor X's own tests)."""

import os
import subprocess
import sys
from pathlib import Path

PY = sys.executable


def run_cli(*args: str, input: str | None = None, env: dict | None = None, cwd=None, timeout: float = 30):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run(
        [PY, "-m", "agents_room", *args], input=input, capture_output=True, text=True, env=e, cwd=cwd, timeout=timeout
    )


def make_repo(root: Path, name: str, remote: str | None = None) -> Path:
    """A directory that looks like a git checkout (enough for repo detection; no git needed)."""
    d = root / name
    (d / ".git").mkdir(parents=True)
    cfg = "[core]\n\trepositoryformatversion = 0\n"
    if remote:
        cfg += f'[remote "origin"]\n\turl = {remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    (d / ".git" / "config").write_text(cfg)
    (d / "src").mkdir()
    return d


def hook_argv(command: str) -> list[str]:
    """The Python command line of a hook command: a run's gated hooks put it after the shell's
    doorbell test (``[ -e BELL ] || exit 0; exec …``, agents_room.bells)."""
    import shlex

    return shlex.split(command.split("; exec ", 1)[1] if "; exec " in command else command)


def run_hook_command(command: str, data: str, env: dict, cwd=None, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run a hook command as Claude Code does: through a shell, the event's JSON on its stdin."""
    return subprocess.run(["sh", "-c", command], input=data, capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout)
