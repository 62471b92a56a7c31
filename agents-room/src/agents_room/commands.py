"""The commands for people (join, send, recv, lease, search, doctor, ...): each a thin shell over
:class:`agents_room.room.Room`, printing for a person or, with ``--json``, for a script."""

from __future__ import annotations

import json
import os
import sys
import time

from .room import RoomError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
        extra = "".join([
            f" (re #{m['reply_to']}, thread #{m['thread']})" if m.get("reply_to") else "",
            f" [{m['importance'].upper()}]" if m.get("importance") else "",
            " [ack requested]" if m.get("ack_required") else "",
        ])
        print(f"#{m['id']} {m['sent_at']} {who} ({m['from']}) -> {m['to']} [{', '.join(m['rooms']) or 'direct'}]{extra}")
        for line in m["body"].splitlines() or [""]:
            print(f"    {line}")


def _who_table(res: dict) -> None:
    rows = res["sessions"]
    if not rows:
        print(res.get("note") or "no sessions")
        return
    hdr = ("SESSION", "LABEL", "HARNESS", "REPO", "STATE", "AUTONOMY", "TAGS", "LAST SEEN", "ROOMS", "LEASES")
    data = [
        (r["session"], r["label"] or "-", r["harness"] or "-", r["repo"] or "-", r["state"], r["autonomy"],
         ",".join(r["tags"]) or "-", r["last_seen"] or "-", ",".join(r["rooms"]) or "-",
         ",".join(x["pattern"] for x in r["leases"]) or "-")
        for r in rows
    ]
    widths = [max(len(str(x[i])) for x in [hdr, *data]) for i in range(len(hdr))]
    for line in [hdr, *data]:
        print("  ".join(str(v).ljust(widths[i]) for i, v in enumerate(line)).rstrip())



def run(args, room) -> int:
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
        body = sys.stdin.read() if args.body == ["-"] else " ".join(args.body)
        to = args.to
        if to and os.path.exists(to) and not to.startswith(("s-", "session:", "file:", "tag:")) and to not in ("*", "all"):
            raise RoomError(f"--to {to!r} is a file here: did the shell expand an unquoted --to *? "
                            "Quote it ('*') or write --to all")
        res = room.send(args.session, to, body, subject=args.subject, ttl=args.ttl, room=args.room,
                        reply_to=args.reply_to, importance=args.importance, ack_required=args.ack)
        if args.json:
            _print(res, True)
        else:
            thread = f" in thread #{res['thread']}" if res["thread"] != res["message_id"] else ""
            print(f"message #{res['message_id']}{thread} stored for {res['recipients']} recipient(s) in "
                  f"{', '.join(res['rooms']) or 'no rooms'}")
            if res.get("note"):
                print(f"note: {res['note']}")
        return 0
    if cmd == "unread":
        res = room.unread(args.session)
        if args.json:
            _print(res, True)
        else:
            print(("more than " if res.get("unread_more") else "") + f"{res['unread']} unread"
                  + (f": {res['empty_because']}" if not res["unread"] else ""))
            for m in res["messages"]:
                print(f"  #{m['id']} {m['sent_at']} {m['from_label'] or m['from']}: {m['preview']}")
        return 0
    if cmd == "thread":
        res = room.thread(args.session, args.message_id)
        if args.json:
            _print(res, True)
        else:
            print(f"thread #{res['thread']} ({', '.join(res['participants'])})")
            _print_messages(res["messages"])
        return 0
    if cmd == "ack":
        res = room.ack(args.session, args.message_ids)
        _print(res, args.json)
        return 0 if not res.get("refused") else 1
    if cmd == "search":
        res = room.search(args.session, " ".join(args.query), args.limit, args.room)
        if args.json:
            _print(res, True)
        else:
            print(f"{res['matches']} match(es) for {res['query']!r}")
            _print_messages(res["messages"])
        return 0
    if cmd == "lease":
        return _lease(room, args)
    if cmd == "file":
        res = room.file_check(args.session, args.paths or None)
        if args.json:
            _print(res, True)
        else:
            for f in res["files"]:
                print(f"{f['status']:<10} {f['path']}" + (f"  {f['message']}" if f.get("message") else ""))
            print(f"{res['diverged']} diverged")
        return 1 if res["diverged"] else 0
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
                labels = m.get("recipient_labels") or {}
                states = ", ".join(f"{labels.get(k) or k}:{v}" for k, v in m["deliveries"].items()) or "0 recipients"
                if m.get("ack_required"):
                    states += f"; acked by {', '.join(labels.get(a) or a for a in m['acked_by']) or 'nobody yet'}"
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


def _lease(room, args) -> int:
    from .room import RoomError

    if args.lease_cmd == "list":
        res = room.lease_list(args.repo, include_expired=args.all)
        if args.json:
            _print(res, True)
        elif not res["leases"]:
            print("no live leases")
        else:
            for x in res["leases"]:
                who = x["holder"] + (f" ({x['holder_label']})" if x["holder_label"] else "")
                print(f"#{x['lease_id']} {x['repo'] or '-'} {x['pattern']} {x['mode']} held by {who} [{x['holder_state']}] "
                      f"until {x['expires_at']} ({x['expires_in']})")
        return 0
    if args.force:
        if not args.targets or not all(t.isdigit() for t in args.targets):
            raise RoomError("lease release --force takes lease ids (see `agents-room lease list`)")
        res = room.lease_force_release([int(t) for t in args.targets], by=f"{os.environ.get('USER') or 'a person'} (CLI)")
    else:
        if not args.session:
            raise RoomError("lease release needs --session (your own leases), or --force with lease ids")
        res = room.lease_release(args.session, args.targets or None)
    _print(res, args.json)
    return 0


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
