"""What agents-room registers with each harness: the MCP server entry and the hooks.

Shared by ``agents-room install`` (writes the user's or project's config, merging)
and :mod:`agents_room.integration` (writes per-run files, touching no user config).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

MCP_NAME = "agents-room"
#: every command we register runs `-m agents_room … hook` or `…/agents_room/hook_entry.py … hook`, so a reinstall finds ours
HOOK_MARK = "agents_room"
CLAUDE_EDIT_MATCHER = "Edit|Write|MultiEdit|NotebookEdit"
#: Claude Code's tools that read a file (agents_room.hooks.READ_TOOLS)
CLAUDE_READ_TOOLS = ("Read",)
CODEX_EVENTS = ("SessionStart", "PreToolUse", "PostToolUse", "Stop")  # Codex has no SessionEnd
WAKE_TIMEOUT = 3600


def base_command() -> list[str]:
    """How to run agents-room from a harness: this interpreter with ``-m agents_room``."""
    return [sys.executable, "-m", "agents_room"]


def hook_command(event: str, harness: str, *, autonomy: str | int | None = None, rooms: list[str] | None = None,
                 label: str | None = None, db_path: Path | None = None, wake: bool = False, fast: bool = False,
                 reads_only: bool = False) -> str:
    """The hook's command line. `fast`: started as the file hook_entry.py (no runpy, CLI or argparse
    before the hook runs, which the harness waits for on every tool call) — for one run's
    configuration, as mcp_entry(fast=True); an installed one keeps `-m agents_room`. The fast one
    starts with -S (no `site`: 2-4 ms less per hook; the hook needs only the standard library and
    its own package, found beside the file). `reads_only`: a PostToolUse that only records what the
    tool read or wrote (:func:`gate_hooks`)."""
    base = [sys.executable, "-S", str(Path(__file__).with_name("hook_entry.py"))] if fast else base_command()
    argv = base + ["hook", f"--event={event}", f"--harness={harness}"]
    if db_path is not None:
        argv.insert(len(base), f"--db={db_path}")
    if autonomy is not None:
        argv.append(f"--autonomy={autonomy}")
    for r in rooms or []:
        argv.append(f"--room={r}")
    if label:
        argv.append(f"--label={label}")
    if wake:
        argv.append("--wake")
    if reads_only:
        argv.append("--reads-only")
    return shlex.join(argv)


def _is_wake(autonomy: str | int | None) -> bool:
    return str(autonomy).strip().lower() in ("2", "wake")


def hooks_spec(harness: str, *, autonomy: str | int | None = "wake", rooms: list[str] | None = None,
               label: str | None = None, db_path: Path | None = None, session_start: bool = True,
               fast: bool = False, session_end: bool = True) -> dict:
    """The ``hooks`` mapping in the harness's own layout (event -> matcher groups -> handlers).

    ``session_start=False``: no SessionStart hook — the run's session was joined before the harness
    started (``run-config`` of a headless Claude Code run), so nothing runs before its first request.
    ``fast``: hooks started as the file hook_entry.py (see :func:`hook_command`).
    ``session_end=False``: no SessionEnd hook — the platform that started the run ends its session
    itself once the run is over (``run-config --platform-ends-session``): one Python process less per run.
    """

    def cmd(event: str, **kw) -> dict:
        handler = {"type": "command", "command": hook_command(event, harness, db_path=db_path, fast=fast, **kw),
                   "timeout": 10}
        return handler

    start = cmd("SessionStart", autonomy=autonomy, rooms=rooms, label=label)
    spec: dict = {
        "SessionStart": [{"hooks": [start]}],
        # Claude Code: "*" matches every tool; Codex matchers are regexes, so no matcher (= every tool)
        "PreToolUse": [{"matcher": CLAUDE_EDIT_MATCHER, "hooks": [cmd("PreToolUse")]} if harness == "claude"
                       else {"hooks": [cmd("PreToolUse")]}],
        "PostToolUse": [{"matcher": "*", "hooks": [cmd("PostToolUse", autonomy=autonomy, rooms=rooms, label=label)]}
                        if harness == "claude" else {"hooks": [cmd("PostToolUse", autonomy=autonomy, rooms=rooms, label=label)]}],
        "Stop": [{"hooks": [cmd("Stop")]}],
    }
    if harness == "claude":
        spec["SessionEnd"] = [{"hooks": [cmd("SessionEnd")]}]
        if _is_wake(autonomy):
            wake = cmd("Stop", wake=True)
            wake.update({"timeout": WAKE_TIMEOUT + 60, "async": True, "asyncRewake": True})
            spec["Stop"][0]["hooks"].append(wake)
    else:
        spec = {k: v for k, v in spec.items() if k in CODEX_EVENTS}
    if not session_start:
        del spec["SessionStart"]
    if not session_end:
        spec.pop("SessionEnd", None)
    return spec


def gate_hooks(spec: dict, bells_folder: str, session: str, *, db_path: Path | None, fast: bool,
               record_reads: bool = True, harness: str = "claude") -> dict:
    """A headless run's hooks, started as Python only when there may be something for
    them to do (issue 30; agents_room.bells): PostToolUse (every tool) and Stop when the session's
    doorbell rings; PreToolUse (edits) when it has recorded a read or some lease may be live; and
    an ungated PostToolUse group for Read and the edit tools that records what they read or wrote
    (divergence: a hash taken later would miss the change it is there to see).

    ``record_reads=False`` (a run in a folder of its own, ``run-config --own-checkout``): no such
    group. Only the agent itself changes files there, which Claude Code's own edit check catches;
    what divergence adds is a change by another session in a shared folder. It saves a Python
    start per Read, Edit and Write (~19 ms of CPU each) and the PreToolUse a recorded read arms.

    Codex (which runs a hook's command with ``bash -c`` as Claude Code does with ``sh -c``): one
    PostToolUse hook for every tool both nudges and records what ``apply_patch`` wrote, so it is
    gated only where nothing is recorded (``record_reads=False``); its Stop and PreToolUse as
    Claude Code's."""
    from .bells import LEASES, READ_SUFFIX

    bell = os.path.join(bells_folder, session)
    out = dict(spec)

    def gated(groups: list, gate: list[str]) -> list:
        return [{**g, "hooks": [{**h, "command": _gated(h["command"], gate)} for h in g["hooks"]]} for g in groups]

    if harness != "claude":
        out["PostToolUse"] = spec["PostToolUse"] if record_reads else gated(spec["PostToolUse"], [bell])
    else:
        out["PostToolUse"] = gated(spec["PostToolUse"], [bell]) + ([{
            "matcher": "|".join(CLAUDE_READ_TOOLS + (CLAUDE_EDIT_MATCHER,)),
            "hooks": [{"type": "command", "timeout": 10,
                       "command": hook_command("PostToolUse", "claude", db_path=db_path, fast=fast, reads_only=True)}],
        }] if record_reads else [])
    out["Stop"] = gated(spec["Stop"], [bell])
    out["PreToolUse"] = gated(spec["PreToolUse"], [bell + READ_SUFFIX, os.path.join(bells_folder, LEASES)])
    return out


def _gated(command: str, gate: list[str]) -> str:
    test = " || ".join(f"[ -e {shlex.quote(g)} ]" for g in gate)
    return f"{test} || exit 0; exec {command}"


def mcp_entry(harness: str, db_path: Path | None = None, *, fast: bool = False) -> dict:
    """The MCP server entry. `fast`: the stdio front started as a file (mcp_stdio.py --serve: no
    package, CLI or argparse import before its first answer, which the harness waits for) — for
    one run's configuration, written again for every run; an installed configuration keeps
    `-m agents_room mcp`, which survives the package moving. The fast one starts with -S and loads
    `site` only before a tool call (mcp_stdio.with_site)."""
    cmd = base_command()
    env = {"AGENTS_ROOM_HARNESS": harness}
    if db_path is not None:
        env["AGENTS_ROOM_DB"] = str(db_path)
    args = cmd[1:] + ["mcp"]
    if fast:
        args = ["-S", str(Path(__file__).with_name("mcp_stdio.py")), "--serve"]
    entry = {"command": cmd[0], "args": args, "env": env}
    if harness == "claude":
        entry = {"type": "stdio", **entry}
    return entry


def _ours(command: str) -> bool:
    return HOOK_MARK in command and " hook " in command + " "


def merge_hooks(existing: dict, ours: dict) -> dict:
    """Drop handlers we registered before (found by HOOK_MARK), keep everything else, add ours."""
    out: dict = {}
    for event, groups in (existing or {}).items():
        kept = []
        for g in groups if isinstance(groups, list) else []:
            if not isinstance(g, dict):
                kept.append(g)
                continue
            handlers = [h for h in g.get("hooks", []) if not (isinstance(h, dict) and _ours(str(h.get("command", ""))))]
            if handlers or not g.get("hooks"):
                kept.append({**g, "hooks": handlers})
        if kept:
            out[event] = kept
    for event, groups in ours.items():
        out.setdefault(event, []).extend(json.loads(json.dumps(groups)))
    return out


def toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string literal is a valid TOML basic string


def toml_inline(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return toml_str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_inline(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {toml_inline(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def _toml_key(k: str) -> str:
    import re

    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else toml_str(k)
