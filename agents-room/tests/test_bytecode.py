"""A run's hooks start from compiled bytecode (issue 30): `run-config` compiles the package once,
even where imports may not write it (PYTHONDONTWRITEBYTECODE, an editable install), so no hook
process compiles agents-room's modules again on every tool call."""

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.util import cache_from_source
from pathlib import Path

import agents_room

from room_helpers import hook_argv


def _package_copy(tmp_path: Path) -> Path:
    """This package, copied without any bytecode: as an editable install run with
    PYTHONDONTWRITEBYTECODE=1 has it."""
    src = tmp_path / "src"
    shutil.copytree(Path(agents_room.__file__).parent, src / "agents_room",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return src


def _compiled_from_source(stderr: str) -> list[str]:
    """The package's modules a `python -v` process compiled from source (none read from bytecode)."""
    return re.findall(r"^# code object from (/\S+/agents_room/\S+\.py)$", stderr, re.M)


def test_run_config_compiles_the_package_so_hooks_start_from_bytecode(tmp_path):
    src = _package_copy(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1",
           "AGENTS_ROOM_DB": str(tmp_path / "room.db")}
    run = subprocess.run([sys.executable, "-m", "agents_room", "run-config", "--harness=claude",
                          f"--config-dir={tmp_path / 'run'}", f"--cwd={tmp_path}", "--room=shared:shop"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr
    modules = sorted((src / "agents_room").glob("*.py"))
    assert modules and all(Path(cache_from_source(str(m))).is_file() for m in modules)

    cfg = json.loads(run.stdout)
    hooks = json.loads(Path(cfg["files"][1]).read_text())["hooks"]
    argv = hook_argv(hooks["PostToolUse"][0]["hooks"][0]["command"])
    assert argv[1:3] == ["-S", str(src / "agents_room" / "hook_entry.py")]  # -S: no `site` at start (issue 30)
    payload = {"session_id": "chat-1", "cwd": str(tmp_path), "hook_event_name": "PostToolUse",
               "tool_name": "Bash", "tool_input": {"command": "ls"}}
    hook = subprocess.run([argv[0], "-v", *argv[1:]], input=json.dumps(payload), capture_output=True, text=True,
                          env={**env, **cfg["env"]}, cwd=tmp_path, timeout=60)
    assert hook.returncode == 0
    loaded = re.findall(r"^# code object from '(/\S+/agents_room/__pycache__/\S+\.pyc)'$", hook.stderr, re.M)
    assert len(loaded) >= 3, hook.stderr[-2000:]  # it did import the package's modules, from bytecode
    # Only the entry file itself, which Python never caches for the script it runs.
    assert _compiled_from_source(hook.stderr) == [], _compiled_from_source(hook.stderr)


def test_without_run_config_a_hook_compiles_every_module_again(tmp_path):
    """The case above fails without the compile: the copy's hook compiles its imports."""
    src = _package_copy(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1",
           "AGENTS_ROOM_DB": str(tmp_path / "room.db")}
    hook = subprocess.run([sys.executable, "-v", str(src / "agents_room" / "hook_entry.py"), "hook",
                           "--event=Stop", "--harness=claude"], input="{}", capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=60)
    assert hook.returncode == 0
    assert len(_compiled_from_source(hook.stderr)) >= 3
