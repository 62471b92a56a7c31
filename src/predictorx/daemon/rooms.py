"""Joining every agent run to its project's room (R-ROOM-15).

Agents of one project often work in different repositories (an API here, its clients there) and
cannot see each other. For harnesses agents-room integrates with (Claude Code, Codex), the daemon
adds agents-room's MCP server and hooks to that one run — never to the person's own harness
config — so the agent joins `shared:project-<name>` and its repo room at session start and can
talk to its project's other agents without setup.

agents-room is its own program (GPL-3.0-or-later, its own distribution): the daemon runs the
`agents-room run-config` command, which prints the run's arguments, environment and files as JSON,
and imports nothing of it. A platform run is headless, so it is configured without the wake hook
(issue 9: that hook held every Claude task open ~30 s after its result). For Claude Code,
`run-config` also joins the run's session before the CLI starts and returns what its SessionStart
hook would have said (`intro`), which goes into the prompt: Claude Code runs SessionStart hooks
before its first model request, and that hook (a Python process) was most of the start-up cost
agents-room added (issue 9's Measure). Best effort: a failure here never stops a task.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agentsroom import agents_room_command, project_room

if TYPE_CHECKING:
    from .runner import TaskRun

log = logging.getLogger("predictorx.daemon")
#: harnesses agents-room has hooks for; others run without a room
SUPPORTED = ("claude", "codex")
RUN_CONFIG_TIMEOUT_S = 20.0


class _Spare:
    """One `agents-room run-config --stdin` started ahead of the next run: it has loaded itself
    and waits for that run's arguments, so a run waits ~20 ms for its configuration instead of a
    Python start (0.1–0.2 s, more on a busy machine). Started after a run used one, so an idle
    daemon that never ran such an agent has none; it exits when the daemon does (end of input)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._cmd: list[str] | None = None

    def _start(self, cmd: list[str]) -> subprocess.Popen[str] | None:
        try:
            return subprocess.Popen([*cmd, "run-config", "--stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        except OSError:
            return None

    def take(self, cmd: list[str]) -> subprocess.Popen[str] | None:
        """The waiting process (None: none ready for this command); a new one is started for the next run."""
        with self._lock:
            proc, self._proc = self._proc, None
            if proc is not None and (self._cmd != cmd or proc.poll() is not None):
                _discard(proc)
                proc = None
            self._cmd, self._proc = cmd, self._start(cmd)
        return proc

    def stop(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None:
            _discard(proc)


def _discard(proc: subprocess.Popen[str]) -> None:
    try:
        proc.communicate("", timeout=5)  # end of input: it exits without a word
    except (OSError, subprocess.TimeoutExpired, ValueError):
        proc.kill()
        proc.wait()


SPARE = _Spare()


def run_config(harness: str, *, config_dir: Path, cwd: Path, rooms: list[str], label: str) -> dict[str, Any]:
    """Ask `agents-room run-config` for one headless run's MCP server and hooks (JSON)."""
    cmd = agents_room_command()
    if cmd is None:
        raise RuntimeError("the agents-room command is not installed (pip install agents-room)")
    args = [f"--harness={harness}", f"--config-dir={config_dir}", f"--cwd={cwd}", f"--label={label}"]
    args += [f"--room={r}" for r in rooms]
    res = None
    spare = SPARE.take(cmd)
    if spare is not None:
        try:
            out, err = spare.communicate(json.dumps(args) + "\n", timeout=RUN_CONFIG_TIMEOUT_S)
            res = subprocess.CompletedProcess(spare.args, spare.returncode, out, err)
        except (OSError, subprocess.TimeoutExpired):
            _discard(spare)
        if res is not None and res.returncode == 2:
            res = None  # an agents-room without `--stdin`: the plain command below
    if res is None:
        res = subprocess.run([*cmd, "run-config", *args], capture_output=True, text=True, timeout=RUN_CONFIG_TIMEOUT_S,
                             stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        raise RuntimeError((res.stderr.strip() or f"agents-room run-config exited {res.returncode}").splitlines()[-1])
    cfg = json.loads(res.stdout)
    if not isinstance(cfg.get("args"), list) or not isinstance(cfg.get("env"), dict):
        raise RuntimeError("agents-room run-config printed an unexpected shape")
    return cfg


def room_setup(run: "TaskRun", env: Any, cwd: Path) -> tuple[list[str], dict[str, str], str]:
    """(extra CLI arguments, extra environment, text for the prompt: the agent's session and rooms)."""
    if os.environ.get("PREDICTORX_ROOMS", "1") == "0":
        return [], {}, ""
    provider = run.agent["provider"]
    if provider not in SUPPORTED:
        return [], {}, ""
    ctx = run.context_data
    rooms = [project_room(ctx["project_id"], ctx.get("project_title"))] if ctx.get("project_id") else []
    label = f"{run.agent['name']} · issue #{run.issue['number']}"
    if ctx.get("project_title"):
        label += f" · {ctx['project_title']}"
    try:
        cfg = run_config(provider, config_dir=Path(env.path) / "agents-room", cwd=cwd, rooms=rooms, label=label)
    except Exception as e:  # noqa: BLE001 — coordination is a help, never a reason to fail
        log.warning("task %s runs without agents-room: %s", run.id, e)
        return [], {}, ""
    intro = cfg.get("intro") if isinstance(cfg.get("intro"), str) else ""
    return [str(a) for a in cfg["args"]], {str(k): str(v) for k, v in cfg["env"].items()}, intro


def end_session(extra_env: dict[str, str]) -> None:
    """End the session `run-config` joined ahead for a run (`AGENTS_ROOM_SESSION`) that did not end
    well: killed before any hook of it ran, it would stay in its rooms with no process to judge it
    gone by. A run that ended well ended it with its SessionEnd hook. Best effort."""
    sid, cmd = extra_env.get("AGENTS_ROOM_SESSION"), agents_room_command()
    if not sid or cmd is None:
        return
    env = {**os.environ, **{k: v for k, v in extra_env.items() if k == "AGENTS_ROOM_DB"}}
    try:
        subprocess.run([*cmd, "leave", "--session", sid], env=env, capture_output=True, timeout=RUN_CONFIG_TIMEOUT_S,
                       stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("agents-room session %s was not ended: %s", sid, e)
