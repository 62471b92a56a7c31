"""``agents-room``: the command for people, the MCP server and the hooks.

argparse keeps start-up cheap: the hook runs on every tool call, and neither
the MCP SDK nor anything heavy is imported unless its subcommand runs.
"""

from __future__ import annotations

import json
import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

USAGE_EPILOG = """commands for agents' harnesses: mcp, hook, install, run-config
commands for people: join, leave, send, recv, sent, history, who, watch, doctor, prune
store: $AGENTS_ROOM_DB or ~/.agents-room/room.db"""


def _parser():
    import argparse

    p = argparse.ArgumentParser(
        prog="agents-room",
        description="Rooms, presence, file leases, divergence and nudges for coding agents (SQLite, no daemon).",
        epilog=USAGE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--db", help="store path (default: $AGENTS_ROOM_DB or ~/.agents-room/room.db)")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")

    sub.add_parser("mcp", help="run the MCP server over stdio")

    h = sub.add_parser("hook", help="harness hook: reads the event JSON on stdin")
    h.add_argument("--event", required=True, choices=["SessionStart", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"])
    h.add_argument("--harness", choices=["claude", "codex"], default="claude")
    h.add_argument("--autonomy", help="0/notify, 1/hold, 2/wake (raised on rejoin, never lowered by a hook)")
    h.add_argument("--room", action="append", default=[], help="shared room to join at SessionStart (repeatable)")
    h.add_argument("--label")
    h.add_argument("--wake", action="store_true", help="Stop only: wait while idle and wake the chat on a new message")
    h.add_argument("--wake-timeout", type=float, default=3600.0)
    h.add_argument("--wake-interval", type=float, default=1.0)

    j = sub.add_parser("join", help="join rooms (creates a session for you unless --session is given)")
    j.add_argument("--session")
    j.add_argument("--room", action="append", default=[])
    j.add_argument("--label")
    j.add_argument("--tag", action="append", default=None)
    j.add_argument("--autonomy")
    j.add_argument("--cwd")
    j.add_argument("--harness")
    j.add_argument("--json", action="store_true")

    lv = sub.add_parser("leave", help="leave rooms, or end the session when no --room is given")
    lv.add_argument("--session", required=True)
    lv.add_argument("--room", action="append", default=[])
    lv.add_argument("--json", action="store_true")

    s = sub.add_parser("send", help="send a message")
    s.add_argument("--session", required=True)
    s.add_argument("--to", required=True, help="'*', a session id, file:<glob>, tag:<tag> (comma-separated)")
    s.add_argument("--subject")
    s.add_argument("--ttl", type=float)
    s.add_argument("--room")
    s.add_argument("body", nargs="+")
    s.add_argument("--json", action="store_true")

    r = sub.add_parser("recv", help="read (and mark read) unread messages")
    r.add_argument("--session", required=True)
    r.add_argument("--peek", action="store_true", help="do not mark read")
    r.add_argument("--json", action="store_true")

    st = sub.add_parser("sent", help="messages you sent and their delivery states")
    st.add_argument("--session", required=True)
    st.add_argument("--json", action="store_true")

    hi = sub.add_parser("history", help="room history")
    hi.add_argument("--session", required=True)
    hi.add_argument("--room")
    hi.add_argument("--limit", type=int, default=50)
    hi.add_argument("--json", action="store_true")

    w = sub.add_parser("who", help="sessions and their state")
    w.add_argument("--session")
    w.add_argument("--room")
    w.add_argument("--all", action="store_true", help="include ended sessions")
    w.add_argument("--json", action="store_true")

    wa = sub.add_parser("watch", help="follow messages in rooms as they arrive")
    wa.add_argument("--room", action="append", default=[])
    wa.add_argument("--interval", type=float, default=1.0)
    wa.add_argument("--timeout", type=float, default=None, help="stop after this many seconds")
    wa.add_argument("--since", type=int, default=None, help="start after this message id (default: now)")

    d = sub.add_parser("doctor", help="check the store; --fix applies safe repairs")
    d.add_argument("--fix", action="store_true")
    d.add_argument("--json", action="store_true")

    pr = sub.add_parser("prune", help="delete expired messages, long-gone sessions, old events")
    pr.add_argument("--dry-run", action="store_true")
    pr.add_argument("--json", action="store_true")

    ins = sub.add_parser("install", help="register the MCP server and hooks with a harness")
    ins.add_argument("harness", choices=["claude", "codex"])
    ins.add_argument("--scope", choices=["user", "project"], default="user")
    ins.add_argument("--project-dir", default=None, help="for --scope project (default: current directory)")
    ins.add_argument("--autonomy", default="wake")
    ins.add_argument("--room", action="append", default=[])
    ins.add_argument("--dry-run", action="store_true", help="print what would be written")

    rc = sub.add_parser(
        "run-config",
        help="print, as JSON, the MCP server and hooks to add to one agent run (for platforms; touches no user config)",
    )
    rc.add_argument("--harness", required=True, choices=["claude", "codex"])
    rc.add_argument("--config-dir", required=True, help="a folder owned by this run, for its files")
    rc.add_argument("--cwd", required=True, help="the agent's working directory (its repository gives the repo room)")
    rc.add_argument("--room", action="append", default=[], help="shared room to join (repeatable)")
    rc.add_argument("--label", default="")
    rc.add_argument("--autonomy", default=None, help="notify, hold or wake (default: hold; wake only with --interactive)")
    rc.add_argument("--interactive", action="store_true", help="a person's chat: register the wake hook")
    return p


def _print(obj: Any, as_json: bool) -> None:
    if as_json:
        print(json.dumps(obj, indent=2, sort_keys=True, default=str))
        return
    _human(obj)


def _human(obj: Any, indent: int = 0) -> None:
    pad = "  " * indent
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, (dict, list)) and v:
                print(f"{pad}{k}:")
                _human(v, indent + 1)
            else:
                print(f"{pad}{k}: {v if v not in (None, [], {}) else '-'}")
    elif isinstance(obj, list):
        for item in obj:
            if isinstance(item, dict):
                first = True
                for k, v in item.items():
                    lead = "- " if first else "  "
                    first = False
                    if isinstance(v, (dict, list)) and v:
                        print(f"{pad}{lead}{k}:")
                        _human(v, indent + 2)
                    else:
                        print(f"{pad}{lead}{k}: {v if v not in (None, [], {}) else '-'}")
            else:
                print(f"{pad}- {item}")
    else:
        print(f"{pad}{obj}")


def _print_messages(msgs: list[dict]) -> None:
    for m in msgs:
        who = m.get("from_label") or m["from"]
        print(f"#{m['id']} {m['sent_at']} {who} ({m['from']}) -> {m['to']} [{', '.join(m['rooms']) or 'direct'}]")
        for line in m["body"].splitlines() or [""]:
            print(f"    {line}")


def _who_table(res: dict) -> None:
    rows = res["sessions"]
    if not rows:
        print(res.get("note") or "no sessions")
        return
    hdr = ("SESSION", "LABEL", "HARNESS", "REPO", "STATE", "AUTONOMY", "ROOMS", "LEASES")
    data = [
        (r["session"], r["label"] or "-", r["harness"] or "-", r["repo"] or "-", r["state"], r["autonomy"],
         ",".join(r["rooms"]) or "-", ",".join(x["pattern"] for x in r["leases"]) or "-")
        for r in rows
    ]
    widths = [max(len(str(x[i])) for x in [hdr, *data]) for i in range(len(hdr))]
    for line in [hdr, *data]:
        print("  ".join(str(v).ljust(widths[i]) for i, v in enumerate(line)).rstrip())


_HOOK_FLAGS = {"--event", "--harness", "--autonomy", "--room", "--label", "--wake", "--wake-timeout", "--wake-interval", "--db"}


def _fast_hook_args(argv: list[str]) -> dict | None:
    """Parse ``[--db=X] hook --event=E …`` without argparse (the hook runs on every tool call).

    Returns None for anything unusual; argparse then handles it.
    """
    opts: dict = {"harness": "claude", "autonomy": None, "rooms": [], "label": None, "wake": False,
                  "wake_timeout": 3600.0, "wake_interval": 1.0, "db": None, "event": None}
    seen_hook = False
    it = iter(argv)
    for arg in it:
        if arg == "hook" and not seen_hook:
            seen_hook = True
            continue
        name, eq, value = arg.partition("=")
        if name not in _HOOK_FLAGS or (name == "--db") == seen_hook:
            return None
        if name == "--wake":
            if eq:
                return None
            opts["wake"] = True
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
    if not seen_hook or opts["event"] not in ("SessionStart", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"):
        return None
    if opts["harness"] not in ("claude", "codex"):
        return None
    return opts


def main(argv: list[str] | None = None) -> int:
    as_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    fast = _fast_hook_args(argv) if "hook" in argv else None
    if fast is not None:
        from . import hooks

        if fast["db"]:
            os.environ["AGENTS_ROOM_DB"] = fast["db"]
        if not as_process:
            return hooks.main(fast)
        # A hook process is often the last connection to the store, and closing the last
        # connection checkpoints the WAL with an fsync (~30 ms). Everything is committed;
        # the next writer's automatic checkpoint does that work, so exit without closing.
        code = hooks.main({**fast, "keep_open": True})
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    parser = _parser()
    if not argv:
        parser.print_usage(sys.stderr)
        print("agents-room: a command is required (see agents-room --help)", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.cmd is None:
        parser.print_usage(sys.stderr)
        return 2
    if args.db:
        os.environ["AGENTS_ROOM_DB"] = args.db

    if args.cmd == "hook":
        from . import hooks

        return hooks.main(
            {
                "event": args.event,
                "harness": args.harness,
                "autonomy": args.autonomy,
                "rooms": args.room,
                "label": args.label,
                "wake": args.wake,
                "wake_timeout": args.wake_timeout,
                "wake_interval": args.wake_interval,
                "db": args.db,
            }
        )
    if args.cmd == "mcp":
        from .mcp_server import run

        run(args.db)
        return 0
    if args.cmd == "run-config":
        from pathlib import Path

        from .integration import prepare_agent_run

        try:
            cfg = prepare_agent_run(
                args.harness, config_dir=Path(args.config_dir), rooms=args.room, label=args.label,
                db_path=Path(args.db) if args.db else None, cwd=Path(args.cwd), autonomy=args.autonomy,
                interactive=args.interactive,
            )
        except (OSError, ValueError) as exc:
            print(f"agents-room run-config: {' '.join(str(exc).split())}", file=sys.stderr)
            return 1
        print(json.dumps(cfg.to_json(), indent=2))
        return 0
    if args.cmd == "install":
        from .install import install

        try:
            res = install(
                args.harness, scope=args.scope, project_dir=args.project_dir, autonomy=args.autonomy,
                rooms=args.room, dry_run=args.dry_run,
            )
        except (OSError, ValueError) as exc:
            print(f"agents-room install: {' '.join(str(exc).split())}", file=sys.stderr)  # one line
            return 1
        _human(res)
        return 0

    return _with_store(args)


def _with_store(args) -> int:
    """Commands that open the store: every failure is one sentence on stderr and exit 1."""
    import sqlite3

    from .naming import NameError_
    from .room import Room, RoomError
    from .store import StoreError, default_db_path, diagnose

    path = args.db or default_db_path()
    if args.cmd == "doctor":
        why = diagnose(path)
        if why:  # a store doctor cannot even open: say what is wrong and what to do (issue 8, finding 15)
            if args.json:
                _print({"ok": False, "store": str(path), "problems": [why]}, True)
            else:
                print(f"problem: {why}")
            return 1
    try:
        room = Room.open(path)
    except StoreError as exc:
        print(f"agents-room: {exc}", file=sys.stderr)
        return 1
    try:
        return _people(args, room)
    except (RoomError, NameError_, StoreError) as exc:
        print(f"agents-room: {exc}", file=sys.stderr)
        return 1
    except sqlite3.Error as exc:
        why = diagnose(path) or f"the store {path} failed ({exc}); retry, and run `agents-room doctor` if it persists"
        print(f"agents-room: {why}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `agents-room history … | head`: the reader left, which is not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        room.close()


def _people(args, room) -> int:
    cmd = args.cmd
    if cmd == "join":
        res = room.join(
            session=args.session, rooms=args.room, label=args.label, tags=args.tag, autonomy=args.autonomy,
            # a rejoin with --session stays in its repo unless --cwd says otherwise (doctor's fix
            # commands may be run from any directory)
            cwd=args.cwd or (None if args.session else os.getcwd()), harness=args.harness or "cli",
        )
        _print(res, args.json)
        return 0
    if cmd == "leave":
        _print(room.leave(args.session, args.room or None), args.json)
        return 0
    if cmd == "send":
        res = room.send(args.session, args.to, " ".join(args.body), subject=args.subject, ttl=args.ttl, room=args.room)
        if args.json:
            _print(res, True)
        else:
            print(f"message #{res['message_id']} stored for {res['recipients']} recipient(s) in {', '.join(res['rooms']) or 'no rooms'}")
            if res.get("note"):
                print(f"note: {res['note']}")
        return 0
    if cmd == "recv":
        res = room.recv(args.session, peek=args.peek)
        if args.json:
            _print(res, True)
        elif res["messages"]:
            _print_messages(res["messages"])
        else:
            print(res["empty_because"])
        return 0
    if cmd == "sent":
        res = room.sent(args.session)
        if args.json:
            _print(res, True)
        else:
            for m in res["messages"]:
                states = ", ".join(f"{k}:{v}" for k, v in m["deliveries"].items()) or "0 recipients"
                print(f"#{m['id']} {m['sent_at']} -> {m['to']}: {states}")
                print(f"    {m['body'][:200]}")
        return 0
    if cmd == "history":
        res = room.history(args.session, args.room, args.limit)
        if args.json:
            _print(res, True)
        else:
            print(f"history of {', '.join(res['rooms'])}")
            _print_messages(res["messages"])
        return 0
    if cmd == "who":
        res = room.who(session=args.session, room=args.room, include_ended=args.all)
        if args.json:
            _print(res, True)
        else:
            _who_table(res)
        return 0
    if cmd == "watch":
        return _watch(room, args)
    if cmd == "doctor":
        res = room.doctor(fix=args.fix)
        if args.json:
            _print(res, True)
        else:
            print(f"integrity: {res['integrity']}; schema {res['schema_version']['found']} (expected {res['schema_version']['expected']})")
            for p in res["problems"]:
                print(f"problem: {p}")
            for s in res["split_rooms"]:
                print(f"split room {s['split_from']!r} -> {s['room']!r}:")
                for pair in s["fix"]:
                    for c in pair:
                        print(f"    {c}")
            for b in res["below_wake"]:
                print(f"below wake: {b['session']} ({b['label'] or b['harness'] or '-'}) at {b['autonomy']}: {b['fix']}")
            for f in res["fixed"]:
                print(f"fixed: {f}")
            if not res["problems"]:
                print("no problems found")
        return 0 if not res["problems"] else 1
    if cmd == "prune":
        _print(room.prune(dry_run=args.dry_run), args.json)
        return 0
    return 2


def _watch(room, args) -> int:
    from .naming import normalize_room

    names = [normalize_room(r) if not r.startswith("repo:") else r for r in args.room]
    last = args.since if args.since is not None else room.latest_message_id()
    deadline = time.monotonic() + args.timeout if args.timeout else None
    print(f"watching {', '.join(names) or 'all rooms'} (Ctrl-C to stop)", flush=True)
    while deadline is None or time.monotonic() < deadline:
        msgs = room.messages_after(last, names)
        if msgs:
            _print_messages(msgs)
            sys.stdout.flush()
            last = msgs[-1]["id"]
        time.sleep(args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
