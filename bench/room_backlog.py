"""agents-room receive against its backlog (issue 30 item 3): prints one JSON object.

    .venv/bin/python bench/room_backlog.py [--samples 31] [--backlogs 0,4000,100000]

For each backlog size a store holds that many unread messages for one session (written in bulk,
as `send` leaves them), and the bench times, interleaved with the near-empty store (just the 20
that are read): `Room.recv(limit=20)` (what `msg_recv` runs; each call reads 20 and marks them
read), a peek of 20, `Room.unread` (`msg_unread`: the count and 200 previews, against a store
holding just those 200) and `Room.pending(event="tool")` (what the hooks run on every tool call: it
offers the oldest 100, against a store holding just those 100). Medians and p90 in ms, and each backlog's median over the near-empty one's. Temporary stores only;
~/.agents-room is never touched. Target: every ratio ≤ 2 (before: ~5 ms at 4,000 unread against
~1.7 ms near empty, 175 ms at 100,000).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agents_room import delivery, messaging
from agents_room.room import Room

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit, log, machine, percentile

BATCH = 20
UNREAD_PREVIEWS = getattr(messaging, "UNREAD_PREVIEWS", 200)  # an older agents-room (before/after) has no name for it
OFFER_CAP = getattr(delivery, "OFFER_CAP", 100)


def _store(root: Path, name: str) -> tuple[Room, str, str]:
    repo = root / f"repo-{name}"
    (repo / ".git").mkdir(parents=True)
    room = Room.open(root / f"{name}.db")
    a = room.join(cwd=str(repo), rooms=["x"], label="sender")["session"]
    b = room.join(cwd=str(repo), rooms=["x"], label="reader")["session"]
    return room, a, b


def _unread(room: Room, sender: str, reader: str, n: int) -> None:
    c = room.conn
    rid = c.execute("SELECT id FROM rooms WHERE name='shared:x'").fetchone()[0]
    first = (c.execute("SELECT max(id) FROM messages").fetchone()[0] or 0) + 1
    ids = range(first, first + n)
    now = time.time()
    c.execute("BEGIN IMMEDIATE")
    c.executemany("INSERT INTO messages(id, sender, room_id, selector, body, created_at, recipient_count, thread_id) "
                  "VALUES (?,?,?,'*',?,?,1,?)", [(i, sender, rid, f"progress note {i}", now, i) for i in ids])
    c.executemany("INSERT INTO message_rooms(message_id, room_id) VALUES (?,?)", [(i, rid) for i in ids])
    c.executemany("INSERT INTO deliveries(message_id, recipient) VALUES (?,?)", [(i, reader) for i in ids])
    c.execute("COMMIT")


def _ms(xs: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(xs) * 1000, 3), "p90_ms": round(percentile(sorted(xs), 90) * 1000, 3)}


def _measure(near: dict[str, tuple[Room, str, str]], big: tuple[Room, str, str], samples: int) -> dict[str, dict]:
    """The four calls on both stores, interleaved sample by sample. Near empty is the store
    holding just what the call returns: 20 for a receive, 200 (its previews) for unread, 100 (what
    it offers) for the hooks' pending check."""
    (small, sa, sb), (room, _, rb) = near["recv"], big
    times: dict[str, dict[str, list[float]]] = {k: {"near_empty": [], "backlog": []}
                                                for k in ("recv", "peek", "unread", "pending")}
    for _ in range(samples):
        _unread(small, sa, sb, BATCH)
        for key, call in (("peek", lambda r, s: r.recv(s, limit=BATCH, peek=True)),
                          ("unread", lambda r, s: r.unread(s)),
                          ("pending", lambda r, s: r.pending(s, "tool")),
                          ("recv", lambda r, s: r.recv(s, limit=BATCH))):
            store = near.get(key, near["recv"])
            base = (store[0], store[2])
            for which, (r, s) in (("near_empty", base), ("backlog", (room, rb))):
                t0 = time.perf_counter()
                call(r, s)
                times[key][which].append(time.perf_counter() - t0)
    out = {}
    for key, both in times.items():
        out[key] = {"near_empty": _ms(both["near_empty"]), "backlog": _ms(both["backlog"]),
                    "ratio_p50": round(statistics.median(both["backlog"]) / statistics.median(both["near_empty"]), 2)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=31, help="calls per figure (median and p90)")
    ap.add_argument("--backlogs", default="0,4000,100000", help="unread messages besides the 20 read, comma list")
    args = ap.parse_args()
    backlogs = [int(x) for x in args.backlogs.split(",") if x.strip()]
    result: dict = {"bench": "room_backlog", "batch": BATCH, "samples": args.samples, "machine": machine(),
                    "target": "every ratio_p50 ≤ 2 (a receive costs what it returns, not the backlog)", "backlogs": {}}
    tmp = Path(tempfile.mkdtemp(prefix="room-backlog-"))
    try:
        near = {"recv": _store(tmp, "near"), "unread": _store(tmp, "previews"), "pending": _store(tmp, "offers")}
        _unread(*near["unread"], UNREAD_PREVIEWS)
        _unread(*near["pending"], OFFER_CAP)
        for n in backlogs:
            log(f"backlog {n}: writing")
            big = _store(tmp, f"b{n}")
            _unread(big[0], big[1], big[2], n + args.samples * BATCH)  # still n unread at the last sample
            log(f"backlog {n}: measuring")
            result["backlogs"][str(n)] = _measure(near, big, args.samples)
            big[0].conn.close()
        result["loadavg_1_5_15_at_end"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    emit(result)


if __name__ == "__main__":
    main()
