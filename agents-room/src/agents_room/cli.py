"""``agents-room``: the command for people, the MCP server and the hooks.

argparse keeps start-up cheap: the hook runs on every tool call, and neither
the MCP SDK nor anything heavy is imported unless its subcommand runs.
"""

from __future__ import annotations

import functools
import json
import os
import sys


USAGE_EPILOG = """commands for agents' harnesses: mcp, hook, install, run-config
commands for people: join, leave, send, recv, unread, sent, history, thread, ack, search, who, watch,
  lease list|release, file check, guard install|check, doctor, prune
store: $AGENTS_ROOM_DB or ~/.agents-room/room.db"""


@functools.lru_cache(maxsize=1)
def _parser():
    """One parser per process: `run-config --serve` answers many runs, and building it is most of
    a warm run-config's time (argparse translates every help string)."""
    import argparse

    p = argparse.ArgumentParser(
        prog="agents-room", description="Rooms, presence, file leases, divergence and nudges for coding agents (SQLite, no daemon).",
        epilog=USAGE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
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
    h.add_argument("--wake-interval", type=float, help="longest sleep between looks while the store is watched (default 60 s); unwatched, at most 1 s")
    h.add_argument("--reads-only", action="store_true", help="PostToolUse only: record what the tool read or wrote, nothing more")

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
    s.add_argument("--to", help="'*' or all, a session id, file:<glob>, tag:<tag> (comma-separated); optional with --reply-to")
    s.add_argument("--subject")
    s.add_argument("--ttl", type=float, help="seconds until it expires (at most 30 days)")
    s.add_argument("--room")
    s.add_argument("--reply-to", type=int, help="id of the message this answers (joins its thread)")
    s.add_argument("--importance", choices=["low", "normal", "high", "urgent"])
    s.add_argument("--ack", action="store_true", help="ask each recipient to acknowledge (msg_ack)")
    s.add_argument("body", nargs="+", help="the message; '-' reads it from stdin")
    s.add_argument("--json", action="store_true")

    un = sub.add_parser("unread", help="unread count and previews, without marking read")
    un.add_argument("--session", required=True)
    un.add_argument("--json", action="store_true")

    th = sub.add_parser("thread", help="the whole thread of a message")
    th.add_argument("--session", required=True)
    th.add_argument("message_id", type=int)
    th.add_argument("--json", action="store_true")

    ak = sub.add_parser("ack", help="acknowledge messages addressed to you")
    ak.add_argument("--session", required=True)
    ak.add_argument("message_ids", type=int, nargs="+")
    ak.add_argument("--json", action="store_true")

    se = sub.add_parser("search", help="full-text search over the messages a session may see")
    se.add_argument("--session", required=True)
    se.add_argument("--room")
    se.add_argument("--limit", type=int, default=20)
    se.add_argument("query", nargs="+")
    se.add_argument("--json", action="store_true")

    le = sub.add_parser("lease", help="leases: list, release (--force clears another session's stuck lease)")
    lsub = le.add_subparsers(dest="lease_cmd", metavar="list|release", required=True)
    ll = lsub.add_parser("list", help="live leases, their holders and expiry")
    ll.add_argument("--repo", help="only this repository (repo:<name> or <name>)")
    ll.add_argument("--all", action="store_true", help="include expired leases")
    ll.add_argument("--json", action="store_true")
    lr = lsub.add_parser("release", help="release your leases, or with --force clear leases by id")
    lr.add_argument("--session", help="your session (release your own leases)")
    lr.add_argument("--force", action="store_true", help="release the given lease ids whoever holds them (the holder is told)")
    lr.add_argument("targets", nargs="*", help="patterns (yours) or lease ids (--force)")
    lr.add_argument("--json", action="store_true")

    fc = sub.add_parser("file", help="divergence: file check")
    fsub = fc.add_subparsers(dest="file_cmd", metavar="check", required=True)
    fck = fsub.add_parser("check", help="which files a session read have changed since, and by whom")
    fck.add_argument("--session", required=True)
    fck.add_argument("paths", nargs="*")
    fck.add_argument("--json", action="store_true")

    gu = sub.add_parser("guard", help="git pre-commit guard: refuse commits of files another live session leases")
    gsub = gu.add_subparsers(dest="guard_cmd", metavar="install|check", required=True)
    gi = gsub.add_parser("install", help="add the pre-commit hook to a repository")
    gi.add_argument("--repo", default=".", help="the repository (default: the current directory)")
    gi.add_argument("--force", action="store_true", help="replace an existing pre-commit hook that is not ours")
    gc = gsub.add_parser("check", help="what the hook runs: check the staged files (exit 1 to refuse)")
    gc.add_argument("--repo", default=".")

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

    _run_config_parser(sub)
    return p


def _run_config_parser(sub) -> None:
    rc = sub.add_parser("run-config", help="print, as JSON, the MCP server and hooks to add to one agent run "
                                          "(for platforms; touches no user config)")
    rc.add_argument("--harness", required=True, choices=["claude", "codex"])
    rc.add_argument("--config-dir", required=True, help="a folder owned by this run, for its files")
    rc.add_argument("--cwd", required=True, help="the agent's working directory (its repository gives the repo room)")
    rc.add_argument("--room", action="append", default=[], help="shared room to join (repeatable)")
    rc.add_argument("--label", default="")
    rc.add_argument("--autonomy", default=None, help="notify, hold or wake (default: hold; wake only with --interactive)")
    rc.add_argument("--interactive", action="store_true", help="a person's chat: register the wake hook")
    rc.add_argument("--platform-ends-session", action="store_true", help="no SessionEnd hook: the platform ends it")
    rc.add_argument("--platform-forwards-mcp", action="store_true",
                    help="no MCP server in args: the platform's own MCP server offers ours (the `mcp` field)")
    rc.add_argument("--own-checkout", action="store_true",
                    help="the working directory is the run's own (nobody else writes it): no hook records what "
                         "the agent reads for divergence (said back as records_reads)")


def _parse_people(parser, argv: list[str]):
    """argparse, with one hint for the commonest slip: an unquoted --to * that the shell expanded."""
    import contextlib
    import io

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(argv)
    except SystemExit as exc:
        text = err.getvalue()
        if exc.code not in (0, None):
            if "send" in argv and "unrecognized arguments" in text:
                text = text.rstrip() + ("\nagents-room: did the shell expand an unquoted --to *? Quote it ('*') "
                                        "or write --to all\n")
            sys.stderr.write(text)
            return None
        sys.stdout.flush()
        raise


def _run_config_args(line: str) -> list[str]:
    """One run's run-config arguments from a JSON array line (--stdin, --serve); ValueError if not."""
    extra = json.loads(line)
    if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra) \
            or any(a in ("--stdin", "--serve") for a in extra):
        raise ValueError("expected one JSON array of run-config arguments")
    return extra


def _run_config_from_stdin() -> int:
    """``run-config --stdin``: a platform keeps one such process started ahead of its next run.
    It loads what run-config needs, then waits for that run's arguments — one JSON array of the
    usual run-config arguments on one line — and answers as ``run-config`` with them would.
    End of input (the platform stopped) exits 0 without output."""
    from . import integration, room  # noqa: F401 — the imports are the work done ahead

    line = sys.stdin.readline()
    if not line.strip():
        return 0
    try:
        extra = _run_config_args(line)
    except ValueError:
        print("agents-room run-config --stdin: expected one JSON array of run-config arguments", file=sys.stderr)
        return 2
    return main(["run-config", *extra])


def _end_session(line: str, err) -> int:
    """``{"end": SESSION, "db": PATH or null}`` on ``run-config --serve``: the platform ends the
    session of a run that is over (``run-config --platform-ends-session`` registered no SessionEnd
    hook), as that hook would have: leases released, rooms and mail kept for a resume. A session
    that has already ended stays as it was. The exit code: 0 ended (or was), 1 not, 2 a bad request."""
    try:
        request = json.loads(line)
    except ValueError:
        request = None
    sid, db = (request.get("end"), request.get("db")) if isinstance(request, dict) else (None, None)
    if not isinstance(sid, str) or not (db is None or isinstance(db, str)):
        err.write('agents-room run-config --serve: expected one JSON array of run-config arguments, or '
                  '{"end": SESSION, "db": PATH or null}, a line\n')
        return 2
    from .room import Room

    try:
        room = Room.open(db)
        try:
            if room.session_row(sid)["ended_at"] is None:
                room.end(sid)
        finally:
            room.close()
    except Exception as e:  # noqa: BLE001 — one bad request never ends the others' server
        err.write(f"agents-room: session {sid} was not ended: {' '.join(str(e).split())}\n")
        return 1
    return 0


def _run_config_serve() -> int:
    """``run-config --serve``: one process for all of a platform's runs. Each input line is one
    run's run-config arguments as a JSON array; each answer is one JSON line ``{"code": exit code,
    "out": what run-config printed, "err": its error output}``, in order. End of input exits 0.
    A run then waits only for its own configuration (a few ms), never for a Python start. A line
    ``{"end": SESSION, "db": PATH or null}`` ends a run's session once it is over (:func:`_end_session`):
    no Python start for that either."""
    import contextlib
    import io

    from . import bytecode, integration, room  # noqa: F401 — the imports are the work done ahead

    _parser()  # built once (cached), ahead of the first run
    bytecode.ensure()  # (and the runs' hooks and MCP front compiled, ahead of the first run too)
    from .store import keep_warm

    keep_warm()  # the stores the runs use stay open read-only: their opens and closes are cheap
    for line in sys.stdin:
        if not line.strip():
            continue
        out, err = io.StringIO(), io.StringIO()
        if line.lstrip().startswith("{"):  # {"end": SESSION, "db": …}: a run is over
            code = _end_session(line, err)
            sys.stdout.write(json.dumps({"code": code, "out": "", "err": err.getvalue()}) + "\n")
            sys.stdout.flush()
            continue
        try:
            extra = _run_config_args(line)
        except ValueError:
            code = 2
            err.write("agents-room run-config --serve: expected one JSON array of run-config arguments a line\n")
        else:
            db = os.environ.get("AGENTS_ROOM_DB")
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(["run-config", *extra])
                except SystemExit as e:  # argparse's usage errors
                    code = e.code if isinstance(e.code, int) else 2
                except Exception as e:  # noqa: BLE001 — one bad run never ends the others' server
                    code = 1
                    print(f"agents-room run-config: {type(e).__name__}: {e}", file=sys.stderr)
            if db is None:  # `--db` for one run is not the next one's store
                os.environ.pop("AGENTS_ROOM_DB", None)
            else:
                os.environ["AGENTS_ROOM_DB"] = db
        sys.stdout.write(json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue()}) + "\n")
        sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    as_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["guard", "check"]:  # runs on every commit: no argparse, no store migration
        from . import guard

        return guard.main(argv[2:])
    if argv == ["run-config", "--stdin"]:
        return _run_config_from_stdin()
    if argv == ["run-config", "--serve"]:
        return _run_config_serve()
    fast = None
    if "hook" in argv:
        from . import hooks

        fast = hooks.parse_args(argv)
    if fast is not None:
        if not as_process:
            if fast["db"]:
                os.environ["AGENTS_ROOM_DB"] = fast["db"]
            return hooks.main(fast)
        hooks.run_process(fast)
    parser = _parser()
    if not argv:
        parser.print_usage(sys.stderr)
        print("agents-room: a command is required (see agents-room --help)", file=sys.stderr)  # R-ROOM-2
        return 2
    if argv[:1] == ["hook"] or (len(argv) > 1 and argv[0].startswith("--db") and "hook" in argv[:3]):
        # a hook must never block its harness on our own usage error (exit 2 is "block" to Claude
        # Code and Codex): an unknown --event, --harness or flag fails open, like any internal error
        import contextlib
        import io

        try:
            with contextlib.redirect_stderr(io.StringIO()):
                args = parser.parse_args(argv)
        except SystemExit:
            return 0
    else:
        args = _parse_people(parser, argv)
        if args is None:
            return 2
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
                "reads_only": args.reads_only,
            }
        )
    if args.cmd == "mcp":
        from .mcp_stdio import run  # the SDK is imported on the first tool call only

        run(args.db)
        return 0
    if args.cmd == "run-config":
        return _run_config(args)
    if args.cmd == "guard":
        from . import guard

        try:
            res = guard.install(args.repo, force=args.force)
        except guard.GuardError as exc:
            print(f"agents-room guard: {' '.join(str(exc).split())}", file=sys.stderr)
            return 1
        print(f"installed {res['installed']}: commits in {res['repository']} touching files another live session "
              f"leases exclusively are refused (bypass: {res['bypass']})")
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
        from .commands import _human

        _human(res)
        return 0

    return _with_store(args)


def _run_config(args) -> int:
    from pathlib import Path

    from . import liveness
    from .integration import prepare_agent_run

    try:
        cfg = prepare_agent_run(
            args.harness, config_dir=Path(args.config_dir), rooms=args.room, label=args.label,
            db_path=Path(args.db) if args.db else None, cwd=Path(args.cwd), autonomy=args.autonomy,
            interactive=args.interactive, platform_ends_session=args.platform_ends_session,
            platform_forwards_mcp=args.platform_forwards_mcp, own_checkout=args.own_checkout,
            # the platform that asked (this command's caller, or --serve's) ends the session
            platform_pid=liveness.harness_pid() if args.platform_ends_session else None,
        )
    except (OSError, ValueError) as exc:
        print(f"agents-room run-config: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    print(json.dumps(cfg.to_json(), indent=2))
    return 0


def _with_store(args) -> int:
    """Commands that open the store: every failure is one sentence on stderr and exit 1."""
    import sqlite3

    from .errors import AgentsRoomError
    from .room import Room
    from .store import StoreError, default_db_path, diagnose

    path = args.db or default_db_path()
    if args.cmd == "doctor":
        why = diagnose(path)
        if why:  # a store doctor cannot even open: say what is wrong and what to do (issue 8, finding 15)
            if args.json:
                print(json.dumps({"ok": False, "store": str(path), "problems": [why]}, indent=2, sort_keys=True))
            else:
                print(f"problem: {why}")
            return 1
    try:
        room = Room.open(path)
    except StoreError as exc:
        print(f"agents-room: {exc}", file=sys.stderr)
        return 1
    try:
        from .commands import run

        return run(args, room)
    except AgentsRoomError as exc:  # the one root: what the caller should read
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


if __name__ == "__main__":
    sys.exit(main())
