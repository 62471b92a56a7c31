"""``agents-room hook --event=…``: the harness hook, for Claude Code and Codex.

Reads the harness's JSON on stdin and answers in the form that harness shows
the model:

* SessionStart, PreToolUse, PostToolUse: ``{"hookSpecificOutput": {"hookEventName": E,
  "additionalContext": text}}`` (both harnesses; Codex requires the JSON envelope).
* Stop: ``{"decision": "block", "reason": text}`` to hold the turn (autonomy >= hold),
  never twice in one turn, never when ``stop_hook_active``; Codex has our own cap.
* Stop with ``--wake`` (Claude Code, registered ``async`` + ``asyncRewake``): waits
  while the chat is idle and exits 2 with the nudge on stderr when a message
  arrives, which starts a new turn.
* SessionEnd: releases leases, keeps mail for a resume; no output.

Any internal error fails open: exit 0, no output. The module imports only the
standard library and the store, so it stays cheap on every tool call: what only some calls
need (json's encoder for an answer, re for a Codex patch) is imported where it is used.
"""

from __future__ import annotations

import os
import sys
import time

from .jsonload import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EVENTS = ("SessionStart", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")
HARNESSES = ("claude", "codex")
#: The wake hook's longest sleep while it watches the store (storewatch.py): what is due with time
#: alone (a message offered long ago, still unread) is seen within this.
WAKE_RECHECK_S = 60.0
READ_TOOLS = {"Read", "read_file", "view"}
WRITE_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit", "write_file", "edit_file"}
_PATCH_FILE = r"^\*\*\* (?:Add|Update|Delete) File: (.+)$"  # re.M


def _context(event: str, text: str) -> str:
    """The answer that puts `text` in the model's context, as JSON."""
    import json

    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})


def _paths(payload: dict) -> tuple[list[str], bool]:
    """(paths the tool call touches, whether it writes)."""
    tool = payload.get("tool_name") or ""
    ti = payload.get("tool_input") or {}
    if not isinstance(ti, dict):
        ti = {}
    if tool in READ_TOOLS or tool in WRITE_TOOLS:
        p = ti.get("file_path") or ti.get("notebook_path") or ti.get("path")
        return ([p] if isinstance(p, str) and p else []), tool in WRITE_TOOLS
    # Codex: apply_patch (as its own tool or inside a shell command)
    blob = ""
    for key in ("input", "patch", "command"):
        v = ti.get(key)
        if isinstance(v, list):
            v = " ".join(str(x) for x in v)
        if isinstance(v, str):
            blob += v + "\n"
    if "*** Begin Patch" in blob or tool == "apply_patch":
        import re

        return [m.strip() for m in re.findall(_PATCH_FILE, blob, re.M)], True
    return [], False


def _handed_over(room, key: str, harness: str):
    """The session ``run-config`` joined for this run before the harness started (a headless
    Claude Code run: no SessionStart hook), named in ``AGENTS_ROOM_SESSION``.

    The first hook call binds it to the chat (its key and the harness's pid, for liveness); a chat
    that inherited the variable but is another chat (a nested harness) is not given it.
    """
    sid = os.environ.get("AGENTS_ROOM_SESSION")
    if not sid:
        return None
    row = room.conn.execute("SELECT * FROM sessions WHERE id=?", (sid,)).fetchone()
    if row is None or row["ended_at"] is not None:
        return None
    if row["harness_key"] is not None and row["harness_key"] != key:
        return None
    if row["harness_key"] is None or row["pid"] is None:
        from . import liveness

        # A session run-config anchored to the platform that ends it (--platform-ends-session) keeps
        # that pid: a pid seen from inside the run's sandbox (its own PID namespace) means nothing outside.
        pid = liveness.harness_pid() if row["pid"] is None else None
        room.join(session=sid, harness=harness, harness_key=key, pid=pid, raise_only=True)
        row = room.session_row(sid)
    return row


def _session_for(room, payload: dict, harness: str, opts: dict, create: bool):
    key = payload.get("session_id")
    if not isinstance(key, str) or not key:
        return None, None
    handed = _handed_over(room, key, harness)
    if handed is not None:
        return handed, None
    row = room.session_for_chat(key, harness)
    if row is not None and row["ended_at"] is None:
        return row, None
    if not create:
        return None, None
    from . import liveness

    joined = room.join(
        harness_key=key,
        harness=harness,
        cwd=payload.get("cwd") or os.getcwd(),
        rooms=opts.get("rooms"),
        label=opts.get("label"),
        autonomy=opts.get("autonomy"),
        pid=liveness.harness_pid(),
        raise_only=True,
        tags=opts.get("tags"),
    )
    return room.session_row(joined["session"]), joined


def intro(joined: dict) -> str:
    """What the model is told of its session: id, rooms, autonomy, who else is there."""
    sid = joined["session"]
    me = f"{sid}" + (f" ({joined['label']})" if joined.get("label") else "")
    text = (
        f"agents-room: you are session {me} in rooms {', '.join(joined['rooms']) or '(none)'}; "
        f"autonomy {joined['autonomy']}. Pass session=\"{sid}\" to every agents-room tool "
        "(msg_recv, msg_send, room_who, lease_acquire, file_check, ...)."
    )
    others = joined.get("others") or []
    if others:
        shown = ", ".join(
            f"{o['session']}" + (f" {o['label']}" if o.get("label") else "") + f" [{o.get('repo') or 'no repo'}, {o['state']}]"
            for o in others[:4]
        )
        text += f" Also here: {shown}" + (f" +{len(others) - 4} more" if len(others) > 4 else "") + "."
    else:
        text += " Nobody else is in these rooms yet."
    for w in joined.get("warnings") or []:
        text += f" Warning: {w}."
    return text


_KEPT: list = []


def _record_reads(room, sid: str, payload: dict) -> None:
    """The hash of each file the tool call read or wrote, as this session last saw it (divergence)."""
    paths, _ = _paths(payload)
    for p in paths[:20]:
        try:
            room.file_read(sid, p)
        except Exception:  # noqa: BLE001 — a hook fails open
            pass


def _settle(room, sid: str) -> None:
    """Silence the session's doorbell if nothing is left due (bells.py); on any failure it stays rung."""
    try:
        from .bells import settle_bell

        settle_bell(room, sid)
    except Exception:  # noqa: BLE001 — one Python start too many next time, never a nudge lost
        pass


def handle(event: str, harness: str, payload: dict, opts: dict) -> tuple[str, int, str]:
    """One hook call: (stdout, exit code, stderr).

    With ``opts["keep_open"]`` the store connection is left open for the process
    to exit without closing it (see :func:`agents_room.cli.main`).
    """
    from .room import Room

    if event not in EVENTS:
        return "", 0, ""
    if event == "PreToolUse":
        paths, writes = _paths(payload)
        if not (paths and writes):
            return "", 0, ""  # nothing to check: do not even open the store
    room = Room.open(opts.get("db"))
    try:
        if event == "SessionStart":
            row, joined = _session_for(room, payload, harness, opts, create=True)
            if row is None:
                return "", 0, ""  # no chat id in the payload: nothing to join as
            if joined is None:  # existing live row: rejoin to refresh rooms, pid and autonomy (never lowered)
                from . import liveness

                joined = room.join(
                    session=row["id"], rooms=opts.get("rooms"), label=opts.get("label"), autonomy=opts.get("autonomy"),
                    cwd=payload.get("cwd") or row["cwd"], pid=liveness.harness_pid(), raise_only=True,
                )
            room.reset_stop_guard(joined["session"])  # a hold of a turn before this start no longer counts
            if opts.get("warning"):
                joined = {**joined, "warnings": [*joined.get("warnings", []), opts["warning"]]}
            text = intro(joined)
            try:
                room.maybe_prune()  # at most once a day, so no timer is needed
            except Exception:  # noqa: BLE001 — pruning is housekeeping; a hook never fails the chat
                pass
            offer = room.pending(joined["session"], "tool")
            if offer:
                text += " " + offer.nudge
            return _context(event, text), 0, ""

        if event == "SessionEnd":
            row, _ = _session_for(room, payload, harness, opts, create=False)
            if row is not None:
                room.end(row["id"])
            return "", 0, ""

        if event == "PreToolUse":
            return _pre_tool_use(room, payload, harness, opts)

        if event == "PostToolUse":
            row, joined = _session_for(room, payload, harness, opts, create=not opts.get("reads_only"))
            if row is None:
                return "", 0, ""
            sid = row["id"]
            _record_reads(room, sid, payload)
            if opts.get("reads_only"):  # run-config's ungated group for Read and the writes (bells.py)
                return "", 0, ""
            turn = payload.get("turn_id")
            room.tool_seen(sid, turn_id=turn if isinstance(turn, str) else None)
            offer = room.pending(sid, "tool")
            _settle(room, sid)
            parts = []
            if joined is not None:
                parts.append(intro(joined))
            if offer:
                parts.append(offer.nudge)
            if not parts:
                return "", 0, ""
            return _context(event, " ".join(parts)), 0, ""

        if event == "Stop":
            row, _ = _session_for(room, payload, harness, opts, create=False)
            if row is None:
                return "", 0, ""
            if opts.get("wake"):
                return _wake(room, row, opts)
            offer = room.stop_check(
                row["id"],
                harness=harness,
                stop_hook_active=bool(payload.get("stop_hook_active")),
                turn_id=payload.get("turn_id") if isinstance(payload.get("turn_id"), str) else None,
            )
            _settle(room, row["id"])
            if offer is None:
                return "", 0, ""
            import json

            reason = offer.nudge + " Read them before you stop; answer if they need it, then you may stop."
            return json.dumps({"decision": "block", "reason": reason}), 0, ""
    finally:
        if opts.get("keep_open"):
            _KEPT.append(room)
        else:
            room.close()
    return "", 0, ""


def _pre_tool_use(room, payload: dict, harness: str, opts: dict) -> tuple[str, int, str]:
    """Before an edit: another session's lease on the file, or the file changed since this session read it."""
    row, _ = _session_for(room, payload, harness, opts, create=False)
    if row is None:
        return "", 0, ""
    paths, _ = _paths(payload)
    notes = []
    from .naming import abs_path, rel_path

    for p in paths:
        shown = rel_path(abs_path(p, row["repo_root"], row["cwd"]), row["repo_root"])
        for c in room.leases_against(row["id"], p):
            article = "an" if c["mode"] == "exclusive" else "a"
            notes.append(
                f"{shown} is under {article} {c['mode']} lease held by {c['holder']}"
                + (f" ({c['holder_label']})" if c["holder_label"] else "")
                + f" in {c['repo'] or 'no repo'} until {c['expires_at']}; message them (msg_send to=\"file:{c['pattern']}\") before editing"
            )
    try:
        check = room.file_check(row["id"], paths)
        notes += [f["message"] for f in check["files"] if f["status"] in ("changed", "deleted")]
    except Exception:  # noqa: BLE001 — a hook fails open
        pass
    try:
        from .bells import settle_leases_bell

        settle_leases_bell(room)  # no live lease left: the next PreToolUse need not start Python for one
    except Exception:  # noqa: BLE001 — the bell stays: one Python start too many, nothing missed
        pass
    if not notes:
        return "", 0, ""
    return _context("PreToolUse", "agents-room: " + "; ".join(notes) + "."), 0, ""


def _wake(room, row, opts: dict) -> tuple[str, int, str]:
    """Wait while the chat is idle; a message wakes it (exit 2, nudge on stderr).

    It wakes for a message never offered, and for one offered longer ago than the
    Stop retry window (30 minutes) and still unread: an idle chat is reminded too.
    """
    from .room import WAKE

    if row["autonomy"] < WAKE:
        return "", 0, ""
    from .storewatch import StoreWatch

    sid = row["id"]
    token = room.wake_register(sid)
    deadline = time.monotonic() + float(opts.get("wake_timeout") or 3600)
    watch = StoreWatch(room.conn.execute("PRAGMA database_list").fetchone()[2])
    # Watched, the store is asked again when it changed (a message is a write), and at least
    # every WAKE_RECHECK_S (or the longest sleep asked) for what becomes due with time alone.
    # Unwatched (no inotify, or the user's inotify instances all taken), nothing wakes a sleep
    # early: it is asked every second at most, whatever the longest sleep asked, as before.
    asked = float(opts.get("wake_interval") or 0) or None
    interval = (asked or WAKE_RECHECK_S) if watch.watching else min(asked or 1.0, 1.0)
    try:
        while time.monotonic() < deadline:
            if not room.wake_current(sid, token):
                return "", 0, ""  # superseded, busy again, or ended
            if room.has_due(sid, "stop"):
                offer = room.pending(sid, "stop")
                if offer:
                    room.wake_release(sid, token)
                    return "", 2, offer.nudge
            watch.wait(min(interval, deadline - time.monotonic()))
    finally:
        watch.close()
    return "", 0, ""


def main(argv_opts: dict) -> int:
    """Entry from the CLI; never raises, never blocks the harness on our own failure."""
    try:
        raw = sys.stdin.read()
        payload = loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            return 0
        event = argv_opts["event"]
        harness = argv_opts.get("harness") or "claude"
        rooms = list(argv_opts.get("rooms") or [])
        env_rooms = os.environ.get("AGENTS_ROOM_ROOMS", "")
        rooms += [r for r in env_rooms.split(",") if r.strip()]
        opts: dict[str, Any] = dict(argv_opts)
        opts["rooms"] = rooms
        opts["label"] = argv_opts.get("label") or os.environ.get("AGENTS_ROOM_LABEL") or None
        if os.environ.get("AGENTS_ROOM_HEADLESS") == "1":  # set by run-config for a platform run
            from .queries import HEADLESS_TAG

            opts["tags"] = [HEADLESS_TAG]
        if opts.get("autonomy") is not None:
            from .queries import RoomError, parse_autonomy

            try:
                parse_autonomy(opts["autonomy"])
            except RoomError:
                # a typo (--autonomy=wakee) must not silently keep the chat out of every room: join at the
                # stored (or default) level and say so in the context the model reads
                opts["warning"] = (f"--autonomy={opts['autonomy']} is not a level (notify, hold or wake), so the level "
                                   "was left as it was; fix the hook command")
                opts["autonomy"] = None
        out, code, err = handle(event, harness, payload, opts)
    except BaseException:  # noqa: BLE001 — fail open: exit 0, no output
        if os.environ.get("AGENTS_ROOM_DEBUG"):
            import traceback

            traceback.print_exc()
        return 0
    if out:
        sys.stdout.write(out + "\n")
    if err:
        sys.stderr.write(err + "\n")
    return code


_FLAGS = {"--event", "--harness", "--autonomy", "--room", "--label", "--wake", "--wake-timeout", "--wake-interval", "--db",
          "--reads-only"}


def parse_args(argv: list[str]) -> dict | None:
    """Parse ``[--db=X] hook --event=E …`` without argparse, as the CLI's parser reads it (the hook
    runs on every tool call: both entries, hook_entry.py and the CLI, read its arguments here).

    Returns None for anything unusual; argparse then handles it.
    """
    opts: dict = {"harness": "claude", "autonomy": None, "rooms": [], "label": None, "wake": False,
                  "wake_timeout": 3600.0, "wake_interval": None, "db": None, "event": None, "reads_only": False}
    seen_hook = False
    it = iter(argv)
    for arg in it:
        if arg == "hook" and not seen_hook:
            seen_hook = True
            continue
        name, eq, value = arg.partition("=")
        if name not in _FLAGS or (name == "--db") == seen_hook:
            return None
        if name in ("--wake", "--reads-only"):
            if eq:
                return None
            opts[name[2:].replace("-", "_")] = True
            continue
        if not eq:
            value = next(it, None)
            if value is None:
                return None
        key = name[2:].replace("-", "_")
        if key == "room":
            opts["rooms"].append(value)
        elif key in ("wake_timeout", "wake_interval"):
            try:
                opts[key] = float(value)
            except ValueError:
                return None
        else:
            opts[key] = value
    if not seen_hook or opts["event"] not in EVENTS:
        return None
    if opts["harness"] not in HARNESSES:
        return None
    return opts


def run_process(opts: dict) -> None:
    """Run one hook as the whole process, and end it (never returns)."""
    if opts["db"]:
        os.environ["AGENTS_ROOM_DB"] = opts["db"]
    # A hook process is often the last connection to the store, and closing the last
    # connection checkpoints the WAL with an fsync (~30 ms). Everything is committed;
    # the next writer's automatic checkpoint does that work, so exit without closing.
    code = main({**opts, "keep_open": True})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
