"""Shared by every concept of the room: constants, errors, formatting and the common queries
(sessions by id, room ids, events, message rows).
"""

from __future__ import annotations

import time

from .sqlite_api import sqlite3
from .errors import AgentsRoomError
from . import liveness

TYPE_CHECKING = False  # typing is not imported at run time: the hook runs on every tool call
if TYPE_CHECKING:
    from typing import Any, Callable


NOTIFY, HOLD, WAKE = 0, 1, 2
AUTONOMY_NAMES = {NOTIFY: "notify", HOLD: "hold", WAKE: "wake"}
#: an offered delivery is re-offered on tool events at once, on Stop only after this
RETRY_WINDOW = {"tool": 0.0, "stop": 30 * 60.0}
DEFAULT_LEASE_TTL = 15 * 60.0
MAX_LEASE_TTL = 24 * 3600.0
#: a message's time to live is finite and at most this (R-ROOM-8; issue 8 finding 15)
MAX_MESSAGE_TTL = 30 * 24 * 3600.0
#: the tag of a headless platform run's session (run-config without --interactive): below wake by design
HEADLESS_TAG = "headless"
IMPORTANCE = ("low", "normal", "high", "urgent")
#: unread counts stop here ("more than 500"): counting a 100,000-message backlog on every
#: receive cost more than the receive (issue 30); the count is exact up to the cap
UNREAD_COUNT_CAP = 500


def _env_bytes(name: str, default: int) -> int:
    import os

    try:
        value = int(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if value > 0 else default


#: a message body is at most this many bytes (UTF-8); AGENTS_ROOM_MAX_BODY overrides (R-ROOM-16)
MAX_BODY_BYTES = _env_bytes("AGENTS_ROOM_MAX_BODY", 64 * 1024)
#: one msg_recv returns at most this many bytes of bodies; the rest stays unread, with a hint
MAX_RECV_BYTES = _env_bytes("AGENTS_ROOM_MAX_RECV", 256 * 1024)
CODEX_HOLD_CAP = 3  # Stop blocks per rolling hour for Codex (Codex has no cap of its own)
CODEX_HOLD_WINDOW = 3600.0
#: the "Stop already held once" flag counts only for the turn it was set in; a turn whose Stop
#: never came back (interrupted, crashed) must not let the next turn's Stop through unheld
STOP_GUARD_TTL = 10 * 60.0
SYSTEM_SENDER = "agents-room"
GONE_PRUNE_AFTER = 7 * 24 * 3600.0
EVENTS_PRUNE_AFTER = 30 * 24 * 3600.0
STALE_OFFER_AFTER = 3600.0
AUTO_PRUNE_EVERY = 24 * 3600.0



class RoomError(AgentsRoomError):
    """An error meant for the caller (agent or person): the message says what to do."""


def parse_autonomy(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        v = value.strip().lower()
        for k, name in AUTONOMY_NAMES.items():
            if v == name:
                return k
        try:
            value = int(v)
        except ValueError:
            raise RoomError(f"autonomy must be 0/notify, 1/hold or 2/wake, not {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int) or value not in AUTONOMY_NAMES:
        raise RoomError(f"autonomy must be 0/notify, 1/hold or 2/wake, not {value!r}")
    return value


#: Up to this size a file is hashed with Python's own SHA-256, which needs no OpenSSL: hashlib's
#: loading of libcrypto is ~3 ms of a hook's start (issue 30; a hook records each Read and edit of
#: an in-place run), more than hashing this much takes; a larger file is worth OpenSSL's speed.
OWN_SHA256_MAX = 512 * 1024


def _sha256_for(size: int):
    if size <= OWN_SHA256_MAX:
        for own in ("_sha2", "_sha256"):  # (its name from Python 3.12; before)
            try:
                return __import__(own).sha256
            except ImportError:
                pass
    from hashlib import sha256
    return sha256


def file_hash(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return "sha256:" + _sha256_for(len(data))(data).hexdigest()


def _fmt_ts(ts: float | None) -> str | None:
    if ts is None:
        return None
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
    except (OverflowError, OSError, ValueError):  # a row an older agents-room let through (ttl 1e308)
        return "never"


def check_ttl(ttl: Any, what: str, maximum: float) -> float | None:
    """A time to live in seconds: None, or finite, positive and at most ``maximum``; else a RoomError."""
    if ttl is None:
        return None
    import math

    try:
        value = float(ttl)
    except (TypeError, ValueError):
        raise RoomError(f"{what} must be a number of seconds, not {ttl!r}") from None
    if isinstance(ttl, bool) or not math.isfinite(value) or value <= 0 or value > maximum:
        raise RoomError(
            f"{what} must be a positive, finite number of seconds up to {int(maximum)} ({_fmt_span(maximum)}), not {ttl!r}"
        )
    return value


def _fmt_span(seconds: float) -> str:
    if seconds % 86400 == 0:
        return f"{int(seconds // 86400)} days"
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)} hours"
    return f"{int(seconds)} seconds"


def _fmt_in(seconds: float) -> str:
    s = int(round(seconds))
    if s < 0:
        return f"{-s}s ago"
    if s < 120:
        return f"in {s}s"
    if s < 7200:
        return f"in {s // 60}m"
    return f"in {s // 3600}h{(s % 3600) // 60:02d}m"



class RoomBase:
    """The connection, the clock and the queries every concept shares."""

    def __init__(self, conn: sqlite3.Connection, clock: Callable[[], float] = time.time):
        self.conn = conn
        self.clock = clock
        self._bell_folder: str | None | bool = False  # not looked up yet

    # ------------------------------------------------------------------ helpers
    def _event(self, kind: str, session: str | None, **data: Any) -> None:
        import json  # here, not at the top: json imports re and enum, which the hooks' path does without

        self.conn.execute(
            "INSERT INTO events(at, kind, session_id, data) VALUES (?,?,?,?)",
            (self.clock(), kind, session, json.dumps(data, sort_keys=True) if data else None),
        )

    def _room_id(self, name: str, create: bool = True) -> int | None:
        row = self.conn.execute("SELECT id FROM rooms WHERE name=?", (name,)).fetchone()
        if row:
            return row[0]
        if not create:
            return None
        return self.conn.execute("INSERT INTO rooms(name, created_at) VALUES (?,?)", (name, self.clock())).lastrowid

    def _rooms_of(self, sid: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT r.name FROM memberships m JOIN rooms r ON r.id=m.room_id WHERE m.session_id=? ORDER BY r.name",
            (sid,),
        ).fetchall()
        return [r[0] for r in rows]

    def session_row(self, sid: str) -> sqlite3.Row:
        """The session row, or an error naming the id most likely meant (R-ROOM-11)."""
        sid = (sid or "").strip()
        if not sid:
            raise RoomError("no session id given: pass the id room_join returned (it looks like s-1a2b3c4d)")
        row = self.conn.execute("SELECT * FROM sessions WHERE id=?", (sid,)).fetchone()
        if row is not None:
            return row
        raise RoomError(self._unknown_session_message(sid))

    def _unknown_session_message(self, sid: str) -> str:
        import difflib

        by_key = self.conn.execute(
            "SELECT id, label FROM sessions WHERE harness_key=? ORDER BY last_seen DESC LIMIT 1", (sid,)
        ).fetchone()
        if by_key:
            return (
                f"unknown session id {sid!r}: that is your harness's chat key, not an agents-room session id. "
                f"Your session id is {by_key['id']!r}"
                + (f" ({by_key['label']})" if by_key["label"] else "")
                + ": pass that to every agents-room tool."
            )
        ids = [r[0] for r in self.conn.execute("SELECT id FROM sessions WHERE ended_at IS NULL ORDER BY last_seen DESC LIMIT 500")]
        close = difflib.get_close_matches(sid, ids, n=1, cutoff=0.5)
        if not close:
            ids_all = [r[0] for r in self.conn.execute("SELECT id FROM sessions ORDER BY last_seen DESC LIMIT 2000")]
            close = difflib.get_close_matches(sid, ids_all, n=1, cutoff=0.5)
        if close:
            row = self.conn.execute("SELECT label, repo FROM sessions WHERE id=?", (close[0],)).fetchone()
            hint = ", ".join(x for x in (row["label"], row["repo"]) if x)
            return f"unknown session id {sid!r}: did you mean {close[0]!r}" + (f" ({hint})" if hint else "") + "?"
        return (
            f"unknown session id {sid!r}: no session has that id. Call room_join first and pass the id it returns "
            "(it looks like s-1a2b3c4d); your harness's own chat key is not a session id."
        )

    def _touch(self, sid: str) -> None:
        self.conn.execute("UPDATE sessions SET last_seen=? WHERE id=?", (self.clock(), sid))

    def session_state(self, row: sqlite3.Row) -> str:
        if row["ended_at"] is not None:
            return "ended"
        alive = liveness.is_alive(row["pid"], row["pid_start"], row["env_marker"])
        return {True: "live", False: "gone", None: "no-pid"}[alive]


    # --------------------------------------------------------------- doorbells
    def bell_folder(self) -> str | None:
        """The doorbells' folder beside the store (agents_room.bells), or None."""
        folder = self._bell_folder
        if folder is False:
            try:
                from .bells import folder_of

                folder = folder_of(self.conn.execute("PRAGMA database_list").fetchone()[2])
            except Exception:  # noqa: BLE001 — no folder, no bells: hooks then run as they always did
                folder = None
            self._bell_folder = folder
        return folder if isinstance(folder, str) else None

    def _ring(self, name: str) -> None:
        """Ring ``name`` once the current transaction commits (at once outside one)."""
        folder = self.bell_folder()
        if folder is None:
            return
        from .bells import ring

        pending = getattr(self.conn, "after_commit", None)
        if pending is not None and self.conn.in_transaction:
            pending[("bell", folder, name)] = lambda: ring(folder, name)
        else:
            ring(folder, name)

    def _ring_all(self, names) -> None:
        for name in names:
            self._ring(name)

    def notice(self, recipient: str, body: str) -> int:
        """A message from agents-room itself to one session (lease expiry, takeover)."""
        mid = self.conn.execute(
            "INSERT INTO messages(sender, selector, body, created_at, recipient_count, kind) VALUES (?,?,?,?,1,'notice')",
            (SYSTEM_SENDER, recipient, body, self.clock()),
        ).lastrowid
        self.conn.execute("INSERT INTO deliveries(message_id, recipient, state) VALUES (?,?, 'stored')", (mid, recipient))
        self._ring(recipient)
        return mid

    # --------------------------------------------------------------- receiving
    def _msgs(self, rows: list, reader_rooms: set[str] | None = None) -> list[dict]:
        """Message rows as dicts, with the rooms of all of them fetched in one query."""
        by_id: dict[int, list[str]] = {r["id"]: [] for r in rows}
        ids = list(by_id)
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            for mid, name in self.conn.execute(
                "SELECT mr.message_id, r.name FROM message_rooms mr JOIN rooms r ON r.id=mr.room_id "
                f"WHERE mr.message_id IN ({','.join('?' * len(chunk))}) ORDER BY r.name",
                chunk,
            ):
                by_id[mid].append(name)
        return [self._msg_dict(r, by_id[r["id"]], reader_rooms) for r in rows]

    def _msg_dict(self, r: sqlite3.Row, rooms: list[str], reader_rooms: set[str] | None = None) -> dict:
        d = {
            "id": r["id"],
            "from": r["sender"],
            "from_label": r["label"] if "label" in r.keys() else None,
            "to": r["selector"],
            "body": r["body"],
            "sent_at": _fmt_ts(r["created_at"]),
            "rooms": rooms if reader_rooms is None else [x for x in rooms if x in reader_rooms] or rooms,
            "recipients": r["recipient_count"],
        }
        if r["expires_at"]:
            d["expires_at"] = _fmt_ts(r["expires_at"])
        keys = r.keys()
        if "thread_id" in keys and r["thread_id"] is not None and (r["thread_id"] != r["id"] or r["reply_to"]):
            d["thread"] = r["thread_id"]
        if "reply_to" in keys and r["reply_to"]:
            d["reply_to"] = r["reply_to"]
        if "importance" in keys and r["importance"] != "normal":
            d["importance"] = r["importance"]
        if "ack_required" in keys and r["ack_required"]:
            d["ack_required"] = True
        return d

    # `d.state IN ('stored','offered')` spelled as the partial index deliveries_unread (store v8) is,
    # and ordered by d.message_id, so SQLite walks that index in order and stops at the LIMIT
    _PENDING_SQL = (
        "SELECT m.*, s.label, d.state AS dstate FROM deliveries d JOIN messages m ON m.id=d.message_id "
        "LEFT JOIN sessions s ON s.id=m.sender WHERE d.recipient=? AND d.state IN ('stored','offered') "
        "AND (m.expires_at IS NULL OR m.expires_at > ?)"
    )

    def _unread_count(self, sid: str, now: float, cap: int = UNREAD_COUNT_CAP) -> tuple[int, bool]:
        """(unread, unexpired deliveries of `sid` up to `cap`, whether there are more): reads at
        most cap + 1 index entries whatever the backlog."""
        n = self.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM deliveries d JOIN messages m ON m.id=d.message_id "
            "WHERE d.recipient=? AND d.state IN ('stored','offered') AND (m.expires_at IS NULL OR m.expires_at > ?) "
            "LIMIT ?)", (sid, now, cap + 1)).fetchone()[0]
        return min(n, cap), n > cap

