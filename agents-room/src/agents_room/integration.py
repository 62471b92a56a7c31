"""Platform integration (R-ROOM-15): join every agent run to its project's room.

The platform daemon calls :func:`prepare_agent_run` before it launches an agent
CLI and adds the returned arguments, environment and files to that one run.
Nothing in the user's own harness configuration is read or written: Claude
Code gets ``--mcp-config`` and ``--settings`` files in ``config_dir``; Codex gets
``-c`` overrides (``mcp_servers.agents-room.*``, ``hooks.*``, ``features.hooks`` — Codex 0.169
reads ``[features].hooks``; the older ``codex_hooks`` name is deprecated) on its command line, and
``--dangerously-bypass-hook-trust``: Codex runs no untrusted hook, and a headless run has nobody to
trust ours.

A platform run is headless (``claude -p``, ``codex exec``): nobody is there for a wake to start a
turn in, and an ``async`` wake hook keeps the CLI alive after its result. So a headless run gets
no wake hook and at most ``hold`` (issue 9); ``interactive=True`` is for a person's chat.

Programs that are not Python (the Predictor X daemon among them) call ``agents-room run-config``,
which prints this configuration as JSON.

Example::

    cfg = prepare_agent_run(
        "claude",
        config_dir=run_dir / "agents-room",
        rooms=["shared:project-storefront"],
        label="storefront/api #42",
        db_path=None,                 # the user's default store
        cwd=checkout,
    )
    subprocess.Popen(["claude", *cfg.args, "-p", prompt], cwd=checkout, env={**os.environ, **cfg.env})

The agent's SessionStart hook then joins ``repo:<name>`` (from the git checkout
at ``cwd``) and every room in ``rooms``, and tells the model its session id.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import bytecode
from .harness_config import MCP_NAME, gate_hooks, hooks_spec, mcp_entry, toml_inline
from .naming import normalize_room, repo_of


@dataclass(frozen=True)
class AgentRunConfig:
    """What to add to one agent run."""

    harness: str
    #: extra command-line arguments for the agent CLI (append to its argv)
    args: list[str]
    #: extra environment variables for the agent process (merge over its env)
    env: dict[str, str]
    #: files written under config_dir for this run (safe to delete after the run)
    files: list[Path]
    #: the normalised shared rooms the agent will join (its repo room is added by the hook)
    rooms: list[str]
    #: the repo room the agent's cwd maps to, or None when cwd is not in a git repository
    repo_room: str | None
    label: str
    #: marker put in the agent's environment; makes liveness exact on Linux
    marker: str = field(default="")
    #: the autonomy the SessionStart hook asks for
    autonomy: str = field(default="hold")
    #: the session joined for this run before it starts (headless Claude Code), else None
    session: str | None = field(default=None)
    #: what the SessionStart hook would have told the model (its session, rooms, who is there):
    #: for the platform to put in the run's prompt; "" when the hook tells it
    intro: str = field(default="")
    #: the platform ends ``session`` once the run is over (no SessionEnd hook was registered): with
    #: ``run-config --serve``'s ``{"end": session}`` or ``agents-room leave --session``
    platform_ends_session: bool = field(default=False)
    #: the MCP server's entry ({"name", "command", "args", "env", "tools_file": its tools/list
    #: manifest}): what a platform that forwards our tools from its own MCP server starts
    mcp: dict = field(default_factory=dict)
    #: ``args`` hold no MCP server: the platform offers our tools through its own (``mcp``)
    platform_forwards_mcp: bool = field(default=False)
    #: a hook records what the agent reads and writes (divergence); not in a run's own checkout
    records_reads: bool = field(default=True)

    def to_json(self) -> dict:
        """The shape ``agents-room run-config`` prints."""
        return {
            "harness": self.harness, "args": list(self.args), "env": dict(self.env),
            "files": [str(f) for f in self.files], "rooms": list(self.rooms), "repo_room": self.repo_room,
            "label": self.label, "marker": self.marker, "autonomy": self.autonomy,
            "session": self.session, "intro": self.intro, "platform_ends_session": self.platform_ends_session,
            "mcp": dict(self.mcp), "platform_forwards_mcp": self.platform_forwards_mcp,
            "records_reads": self.records_reads,
        }


SUPPORTED = ("claude", "codex")


def prepare_agent_run(
    harness: str,
    *,
    config_dir: Path,
    rooms: list[str],
    label: str,
    db_path: Path | None = None,
    cwd: Path,
    autonomy: str | None = None,
    interactive: bool = False,
    platform_ends_session: bool = False,
    platform_pid: int | None = None,
    platform_forwards_mcp: bool = False,
    own_checkout: bool = False,
) -> AgentRunConfig:
    """Prepare one agent run to join ``rooms`` plus its repo room, without touching user config.

    harness: ``"claude"`` (Claude Code) or ``"codex"`` (Codex CLI).
    config_dir: a directory owned by this run; created if missing.
    rooms: shared rooms, e.g. ``["shared:project-storefront"]`` (``project-storefront`` is the same room).
    label: a human label shown in ``who`` (e.g. ``"storefront/api task 42"``).
    db_path: the store; ``None`` means the default (``$AGENTS_ROOM_DB`` or ``~/.agents-room/room.db``).
    cwd: the agent's working directory (its git checkout gives the repo room).
    autonomy: the level agreed with the operator: ``notify``, ``hold`` or ``wake``; default ``hold`` for a
    headless run, ``wake`` for an interactive one. A headless run never gets ``wake`` (nobody to wake).
    interactive: a person's chat (wake hook registered) rather than a headless platform run.
    platform_ends_session: the platform ends the session it is handed (``session``) once the run is
    over, so no SessionEnd hook is registered (a Python process less per run, issue 30); only for a
    session joined ahead (a headless run), and said back as ``platform_ends_session``. That session
    is then anchored to the platform's process, ``platform_pid`` (default: this one; ``run-config``
    gives its caller's): ``who`` shows it live while that process is, and its hooks bind no pid of
    their own (one seen from inside a sandbox's PID namespace would mean nothing outside it).
    platform_forwards_mcp: ``args`` hold no MCP server; the platform's own offers our tools (``mcp``).
    own_checkout: ``cwd`` is the run's own, written by nobody else: no hook records its reads (gate_hooks).

    A headless run (Claude Code or Codex) with a session joined ahead gets doorbell-gated hooks
    (:func:`~agents_room.harness_config.gate_hooks`, :mod:`agents_room.bells`): Python starts only
    when there may be something for a hook to do.

    Raises ``ValueError`` for an unknown harness, autonomy or an invalid room name.
    """
    if harness not in SUPPORTED:
        raise ValueError(f"unsupported harness {harness!r}; agents-room integrates with {', '.join(SUPPORTED)}")
    level = _level(autonomy, interactive)
    norm = list(dict.fromkeys(normalize_room(r) for r in rooms))
    config_dir = Path(config_dir)
    config_dir.mkdir(parents=True, exist_ok=True)
    db = Path(db_path).expanduser().resolve() if db_path is not None else None
    marker = uuid.uuid4().hex
    env = {
        "AGENTS_ROOM_ROOMS": ",".join(norm),
        "AGENTS_ROOM_LABEL": label,
        "AGENTS_ROOM_MARKER": marker,
    }
    if db is not None:
        env["AGENTS_ROOM_DB"] = str(db)
    if not interactive:
        env["AGENTS_ROOM_HEADLESS"] = "1"  # its session is tagged headless: doctor does not ask to wake it
    repo_room, _ = repo_of(str(Path(cwd).resolve()))
    session, intro, bells = None, "", None
    if not interactive:
        # A harness runs SessionStart hooks before its first model request: join here instead,
        # while the platform prepares the run, and hand the session to the other hooks (gated).
        anchor = (platform_pid or os.getpid()) if platform_ends_session else None
        session, intro, bells = _join_ahead(db, harness, cwd=Path(cwd).resolve(), rooms=norm, label=label,
                                            autonomy=level, anchor=anchor)
        if session:
            env["AGENTS_ROOM_SESSION"] = session
    bytecode.ensure()  # the run's hooks and MCP front start from this package's bytecode
    platform_ends = bool(platform_ends_session and session)
    hooks, entry = (hooks_spec(harness, autonomy=level, rooms=norm, label=label, db_path=db,
                               session_start=session is None, fast=True, session_end=not platform_ends),
                    mcp_entry(harness, db, fast=True))
    if session and bells:
        hooks = gate_hooks(hooks, bells, session, db_path=db, fast=True, record_reads=not own_checkout, harness=harness)
    args, files = _harness_files(harness, config_dir, hooks, None if platform_forwards_mcp else entry)
    return AgentRunConfig(harness=harness, args=args, env=env, files=files, rooms=norm, repo_room=repo_room,
                          label=label, marker=marker, autonomy=level, session=session, intro=intro,
                          platform_ends_session=platform_ends, mcp=_published(entry),
                          platform_forwards_mcp=platform_forwards_mcp, records_reads=not (session and bells and own_checkout))


def _level(autonomy: str | None, interactive: bool) -> str:
    """The autonomy a run gets: ``autonomy`` (default ``wake`` for a chat, ``hold`` headless), never
    ``wake`` headless; ValueError for an unknown level."""
    level = str(autonomy if autonomy is not None else ("wake" if interactive else "hold")).strip().lower()
    level = {"0": "notify", "1": "hold", "2": "wake"}.get(level, level)
    if level not in ("notify", "hold", "wake"):
        raise ValueError(f"autonomy must be notify, hold or wake, not {autonomy!r}")
    if level == "wake" and not interactive:
        level = "hold"  # a headless run ends with its result: a wake would only hold it open (issue 9)
    return level


def _published(entry: dict) -> dict:
    """The MCP entry as ``run-config`` publishes it (``mcp``): for a platform that forwards our tools
    from its own MCP server (``platform_forwards_mcp``) and starts this on the first call of one."""
    return {"name": MCP_NAME, **{k: v for k, v in entry.items() if k != "type"},
            "tools_file": str(Path(__file__).with_name("mcp_tools.json"))}


def _harness_files(harness: str, config_dir: Path, hooks: dict, entry: dict | None) -> tuple[list[str], list[Path]]:
    """The run's extra CLI arguments for `hooks` and the MCP `entry` (None: no MCP server), and the
    files written for them."""
    if harness == "claude":
        settings_file = config_dir / "agents-room.settings.json"
        settings_file.write_text(json.dumps({"hooks": hooks}, indent=2) + "\n")
        files, args = [settings_file], ["--settings", str(settings_file)]
        if entry is not None:
            mcp_file = config_dir / "agents-room.mcp.json"
            mcp_file.write_text(json.dumps({"mcpServers": {MCP_NAME: entry}}, indent=2) + "\n")
            files, args = [mcp_file, settings_file], ["--mcp-config", str(mcp_file), *args]
    else:
        overrides = [
            f"mcp_servers.{MCP_NAME}.command={toml_inline(entry['command'])}",
            f"mcp_servers.{MCP_NAME}.args={toml_inline(entry['args'])}",
            f"mcp_servers.{MCP_NAME}.env={toml_inline(entry['env'])}",
        ] if entry is not None else []
        overrides += ["features.hooks=true"] + [f"hooks.{event}={toml_inline(groups)}" for event, groups in hooks.items()]
        # Codex 0.169 runs no hook it has not been told to trust (a person trusts hooks once in the TUI;
        # a headless `codex exec` never asks), and `-c bypass_hook_trust=true` is not read: the flag is
        # the one way the platform's own hooks run. Checked against the real codex 0.169.0 (issue 9).
        args = ["--dangerously-bypass-hook-trust"] + [a for o in overrides for a in ("-c", o)]
        record = config_dir / "agents-room.codex-overrides.txt"
        record.write_text("\n".join(overrides) + "\n")
        files = [record]
    return args, files


def _join_ahead(db: Path | None, harness: str, *, cwd: Path, rooms: list[str], label: str, autonomy: str,
                anchor: int | None) -> tuple[str | None, str, str | None]:
    """Join a headless run's session (tagged headless). With ``anchor`` (the platform's process, which
    ends the session) it is that pid's; else none yet: its first hook call binds the harness's.
    (session, intro, its doorbells' folder), or (None, "", None) when the store cannot be used: the
    SessionStart hook then joins."""
    from . import bells, liveness
    from .hooks import intro
    from .queries import HEADLESS_TAG
    from .room import Room
    from .store import immediate

    try:
        room = Room.open(db)
    except Exception:  # noqa: BLE001 — the hook path still works
        return None, "", None
    try:
        joined = room.join(harness=harness, cwd=str(cwd), rooms=rooms, label=label, autonomy=autonomy,
                           tags=[HEADLESS_TAG], raise_only=True)
        if anchor is not None:  # not through join(pid=…): that would take another run's row of this pid for its own
            with immediate(room.conn):
                room.conn.execute("UPDATE sessions SET pid=?, pid_start=?, env_marker=? WHERE id=?",
                                  (*liveness.identity(anchor), joined["session"]))
        folder = room.bell_folder()
        return joined["session"], intro(joined), folder if bells.ready(folder) else None
    except Exception:  # noqa: BLE001
        return None, "", None
    finally:
        room.close()
