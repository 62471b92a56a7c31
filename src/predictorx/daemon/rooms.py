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
import select
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agentsroom import agents_room_command, project_room

log = logging.getLogger("predictorx.daemon")
#: harnesses agents-room has hooks for; others run without a room
SUPPORTED = ("claude", "codex", "acp")
#: an ACP agent gets Codex's configuration; the adapter keeps only its MCP server (ACP has no hooks)
_HARNESS_OF = {"acp": "codex"}
RUN_CONFIG_TIMEOUT_S = 20.0
#: how long after a run that found no `run-config --serve` one is started
START_DELAY_S = 1.0
#: a `run-config --serve` older than this is replaced after its next answer
SERVER_MAX_AGE_S = 600.0


class _Server:
    """One `agents-room run-config --serve` for the daemon's runs: it has loaded itself once and
    answers each run's configuration in a few ms (issue 9: a run waited ~20–60 ms for a process
    started ahead — more, as the next one started beside the run — and an agents-room process
    start is ~0.1 s of CPU). A daemon that can run Claude Code or Codex starts it with itself
    (`start_ahead`); otherwise, or after a failure, it is started START_DELAY_S after a run that
    found none (that run uses the plain command), not beside that run's start. It is replaced
    after SERVER_MAX_AGE_S (an upgraded agents-room is picked up). It exits when the
    daemon stops (end of input). An agents-room without `--serve` gets the plain command per run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()     # one request at a time on the pipe
        self._proc: subprocess.Popen[str] | None = None
        self._started = 0.0
        self._cmd: list[str] | None = None
        self._timer: threading.Timer | None = None
        self._unsupported: set[tuple[str, ...]] = set()

    def ask(self, cmd: list[str], args: list[str]) -> subprocess.CompletedProcess[str] | None:
        """run-config's answer for `args` (as if run as a command), or None: use the plain command."""
        with self._lock:
            if self._cmd != cmd:
                self._drop()
                self._cmd = cmd
            proc = self._proc
            if proc is None:
                if os.name != "nt":  # (select() on a pipe is POSIX)
                    self._later()
                return None
            try:
                answer = self._exchange(proc, args)
            except (OSError, ValueError, TimeoutError) as e:
                if _exit_code(proc) == 2 and not getattr(proc, "answered", False):
                    self._unsupported.add(tuple(cmd))  # an agents-room without --serve: plain commands
                else:
                    log.warning("agents-room run-config --serve failed (%s); starting another", e)
                self._drop()
                self._later()
                return None
            if time.monotonic() - self._started > SERVER_MAX_AGE_S:
                self._drop()
                self._later()
        return subprocess.CompletedProcess(proc.args, answer["code"], answer["out"], answer["err"])

    def serving(self) -> bool:
        """Whether a server is there now (its runs' sessions are then ended through it)."""
        return self._proc is not None

    def end(self, session: str, db: str | None) -> bool:
        """End a run's session through the server (`{"end": …}`: no Python start for it); False if
        it could not (no server now, or one too old to know the request): use the plain command."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return False
            try:
                answer = self._exchange(proc, {"end": session, "db": db})
            except (OSError, ValueError, TimeoutError) as e:
                log.warning("agents-room run-config --serve failed (%s); starting another", e)
                self._drop()
                self._later()
                return False
        if answer["code"] == 1:
            log.warning("agents-room session %s was not ended: %s", session, str(answer.get("err", "")).strip())
        return answer["code"] != 2

    def _exchange(self, proc: subprocess.Popen[str], args: list[str] | dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(args) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], RUN_CONFIG_TIMEOUT_S)
        if not ready:
            raise TimeoutError(f"no answer in {RUN_CONFIG_TIMEOUT_S:.0f} s")
        line = proc.stdout.readline()
        if not line:
            raise ValueError("it exited")
        proc.answered = True  # type: ignore[attr-defined]
        answer = json.loads(line)
        if not isinstance(answer, dict) or not isinstance(answer.get("code"), int):
            raise ValueError("an answer of an unexpected shape")
        return answer

    def start_now(self, cmd: list[str]) -> None:
        """Start the server for `cmd` at once (a daemon that can run such agents starts it with itself)."""
        with self._lock:
            if self._proc is not None or os.name == "nt" or tuple(cmd) in self._unsupported:
                return
            self._cmd = cmd
            self._spawn()

    def _later(self) -> None:
        """Start the server START_DELAY_S from now: not beside the run that needs it now."""
        if self._timer is not None or self._cmd is None or tuple(self._cmd) in self._unsupported:
            return
        timer = self._timer = threading.Timer(START_DELAY_S, lambda: self._start(timer))
        timer.daemon = True
        timer.start()

    def _start(self, timer: threading.Timer) -> None:
        with self._lock:
            if self._timer is not timer:
                return
            self._timer = None
            if self._proc is not None or self._cmd is None:
                return
            self._spawn()

    def _spawn(self) -> None:
        assert self._cmd is not None
        try:
            self._proc = subprocess.Popen([*self._cmd, "run-config", "--serve"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self._started = time.monotonic()
        except OSError as e:
            log.warning("agents-room run-config --serve did not start: %s", e)

    def _drop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            threading.Thread(target=_discard, args=(proc,), daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            proc, self._proc = self._proc, None
        if proc is not None:
            _discard(proc)


def _exit_code(proc: subprocess.Popen[str]) -> int | None:
    try:
        return proc.wait(timeout=1)
    except subprocess.TimeoutExpired:
        return None


def _discard(proc: subprocess.Popen[str]) -> None:
    try:
        proc.communicate("", timeout=5)  # end of input: it exits without a word
    except (OSError, subprocess.TimeoutExpired, ValueError):
        proc.kill()
        proc.wait()


SERVER = _Server()
#: Sessions whose run registered no SessionEnd hook (run-config --platform-ends-session): the daemon
#: ends each once its run is over (`after_run`), through the server — a Python process less per run.
_ENDED_HERE: set[str] = set()
#: run-config's flag for that; an agents-room that does not know it is asked without it
_PLATFORM_ENDS = "--platform-ends-session"
#: run-config's flag for a run whose agents-room tools `predictorx mcp` offers and forwards
_FORWARDS_MCP = "--platform-forwards-mcp"
#: run-config's flag for a run in a folder of its own (RoomRun.own_checkout): no reads recorded
_OWN_CHECKOUT = "--own-checkout"
#: (flag, agents-room command) an older agents-room did not know: asked without it from then on
_UNKNOWN_FLAGS: set[tuple[str, tuple[str, ...]]] = set()
#: where room_setup leaves run-config's MCP entry for workflowhooks.mcp_setup (in the run's env root)
FORWARD_FILE = "predictorx-mcp.agents-room.json"


def run_config(harness: str, *, config_dir: Path, cwd: Path, rooms: list[str], label: str,
               own_checkout: bool = False) -> dict[str, Any]:
    """Ask `agents-room run-config` for one headless run's MCP server and hooks (JSON). `own_checkout`:
    `cwd` is the run's own folder, which nobody else writes (RoomRun.own_checkout)."""
    cmd = agents_room_command()
    if cmd is None:
        raise RuntimeError("the agents-room command is not installed (pip install agents-room)")
    args = [f"--harness={harness}", f"--config-dir={config_dir}", f"--cwd={cwd}", f"--label={label}"]
    args += [f"--room={r}" for r in rooms]
    # The daemon ends the session itself only through a server (a process of its own would cost more
    # than the hook): without one now, the run keeps its SessionEnd hook. A Claude Code run's
    # agents-room tools come through `predictorx mcp` (FORWARD_FILE): one MCP process less per run.
    flags = [f for f, wanted in ((_PLATFORM_ENDS, SERVER.serving()), (_FORWARDS_MCP, harness == "claude"),
                                 (_OWN_CHECKOUT, own_checkout))
             if wanted and (f, tuple(cmd)) not in _UNKNOWN_FLAGS]
    res = _ask(cmd, [*args, *flags])
    unknown = [f for f in flags if f in res.stderr]
    if res.returncode == 2 and unknown:  # an older agents-room: its hook ends the session, its own MCP server
        _UNKNOWN_FLAGS.update((f, tuple(cmd)) for f in unknown)
        res = _ask(cmd, [*args, *(f for f in flags if f not in unknown)])
    if res.returncode != 0:
        raise RuntimeError((res.stderr.strip() or f"agents-room run-config exited {res.returncode}").splitlines()[-1])
    cfg = json.loads(res.stdout)
    if not isinstance(cfg.get("args"), list) or not isinstance(cfg.get("env"), dict):
        raise RuntimeError("agents-room run-config printed an unexpected shape")
    return cfg


def _ask(cmd: list[str], args: list[str]) -> subprocess.CompletedProcess[str]:
    """run-config's answer for `args`, from the server or else a process of its own."""
    res = SERVER.ask(cmd, args)
    if res is None:
        res = subprocess.run([*cmd, "run-config", *args], capture_output=True, text=True, timeout=RUN_CONFIG_TIMEOUT_S,
                             stdin=subprocess.DEVNULL)
    return res


def start_ahead(runtimes: list[dict[str, Any]]) -> None:
    """At the daemon's start: the `run-config --serve` process, if this daemon can run an agent
    that joins rooms (so its first such run does not wait for a Python start either)."""
    if os.environ.get("PREDICTORX_ROOMS", "1") == "0" or not any(r.get("provider") in SUPPORTED for r in runtimes):
        return
    cmd = agents_room_command()
    if cmd is not None:
        SERVER.start_now(cmd)


@dataclass(frozen=True)
class RoomRun:
    """What joining a run to its rooms needs to know of it."""

    task_id: str
    provider: str
    agent_name: str
    issue_number: int
    project_id: str | None = None
    project_title: str | None = None
    #: The run works in a folder of its own (not a person's folder in place): agents-room records
    #: no reads there (`run-config --own-checkout`: a Python start fewer at each Read, Edit, Write).
    own_checkout: bool = False


def room_setup(run: RoomRun, env_root: Path, cwd: Path) -> tuple[list[str], dict[str, str], str]:
    """(extra CLI arguments, extra environment, text for the prompt: the agent's session and rooms)."""
    try:  # (a resumed run's env root: only this run's answer may leave one)
        (Path(env_root) / FORWARD_FILE).unlink(missing_ok=True)
    except OSError:
        pass
    if os.environ.get("PREDICTORX_ROOMS", "1") == "0":
        return [], {}, ""
    if run.provider not in SUPPORTED:
        return [], {}, ""
    rooms = [project_room(run.project_id, run.project_title)] if run.project_id else []
    label = f"{run.agent_name} · issue #{run.issue_number}"
    if run.project_title:
        label += f" · {run.project_title}"
    try:
        cfg = run_config(_HARNESS_OF.get(run.provider, run.provider), config_dir=Path(env_root) / "agents-room", cwd=cwd,
                         rooms=rooms, label=label, own_checkout=run.own_checkout)
    except Exception as e:  # noqa: BLE001 — coordination is a help, never a reason to fail
        log.warning("task %s runs without agents-room: %s", run.task_id, e)
        return [], {}, ""
    intro = cfg.get("intro") if isinstance(cfg.get("intro"), str) else ""
    env = {str(k): str(v) for k, v in cfg["env"].items()}
    if cfg.get("platform_ends_session") is True and env.get("AGENTS_ROOM_SESSION"):
        _ENDED_HERE.add(env["AGENTS_ROOM_SESSION"])
    if cfg.get("platform_forwards_mcp") is True:
        try:
            _write_forward(Path(env_root) / FORWARD_FILE, cfg.get("mcp"))
        except (OSError, ValueError) as e:  # its tools are gone from args: no room rather than half of one
            log.warning("task %s runs without agents-room: its MCP entry cannot be forwarded (%s)", run.task_id, e)
            end_session(env)
            return [], {}, ""
    return [str(a) for a in cfg["args"]], env, intro


def _write_forward(path: Path, entry: Any) -> None:
    """run-config's `mcp` entry, for `predictorx mcp --agents-room` (workflowhooks.mcp_setup)."""
    if not (isinstance(entry, dict) and isinstance(entry.get("command"), str) and isinstance(entry.get("args"), list)
            and isinstance(entry.get("env", {}), dict) and isinstance(entry.get("tools_file"), str)):
        raise ValueError("run-config's `mcp` entry has an unexpected shape")
    path.write_text(json.dumps(entry))


def forward_file(env_root: Path) -> Path | None:
    """The run's agents-room MCP entry room_setup left for `predictorx mcp` to forward to, if any."""
    path = Path(env_root) / FORWARD_FILE
    return path if path.is_file() else None


def after_run(extra_env: dict[str, str], ended_well: bool) -> None:
    """A run with an agents-room session is over: a run that did not end well leaves it
    (`end_session`); one that did is ended here if no SessionEnd hook of its own did that (as that
    hook does: leases released, rooms and mail kept for a resume), through the `--serve` process."""
    sid = extra_env.get("AGENTS_ROOM_SESSION")
    if not sid:
        return
    if not ended_well:
        end_session(extra_env)
    elif sid in _ENDED_HERE:
        _ENDED_HERE.discard(sid)
        if not SERVER.end(sid, extra_env.get("AGENTS_ROOM_DB")):
            end_session(extra_env)


def end_session(extra_env: dict[str, str]) -> None:
    """End the session `run-config` joined ahead for a run (`AGENTS_ROOM_SESSION`) that did not end
    well: killed before any hook of it ran, it would stay in its rooms with no process to judge it
    gone by. A run that ended well ended it in `after_run` (or with its SessionEnd hook). Best effort."""
    sid, cmd = extra_env.get("AGENTS_ROOM_SESSION"), agents_room_command()
    _ENDED_HERE.discard(sid or "")
    if not sid or cmd is None:
        return
    env = {**os.environ, **{k: v for k, v in extra_env.items() if k == "AGENTS_ROOM_DB"}}
    try:
        subprocess.run([*cmd, "leave", "--session", sid], env=env, capture_output=True, timeout=RUN_CONFIG_TIMEOUT_S,
                       stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("agents-room session %s was not ended: %s", sid, e)
