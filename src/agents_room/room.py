"""The room: every operation agents-room offers, over one SQLite connection.

The MCP server, the hooks and the CLI are thin shells over :class:`Room`.
Every read-check-write runs in one ``BEGIN IMMEDIATE`` transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time

from . import liveness

TYPE_CHECKING = False  # typing is not imported at run time: the hook runs on every tool call
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Callable, Iterable
from .naming import (
    NameError_,
    abs_path,
    input_rel_path,
    stored_abs_path,
    glob_matches,
    globs_overlap,
    legacy_key,
    normalize_room,
    rel_path,
    repo_of,
)
from .store import SCHEMA_VERSION, connect, immediate, schema_version

NOTIFY, HOLD, WAKE = 0, 1, 2
AUTONOMY_NAMES = {NOTIFY: "notify", HOLD: "hold", WAKE: "wake"}
#: an offered delivery is re-offered on tool events at once, on Stop only after this
RETRY_WINDOW = {"tool": 0.0, "stop": 30 * 60.0}
DEFAULT_LEASE_TTL = 15 * 60.0
MAX_LEASE_TTL = 24 * 3600.0
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


class RoomError(Exception):
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


def file_hash(path: str) -> str | None:
    import hashlib

    try:
        with open(path, "rb") as fh:
            return "sha256:" + hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _fmt_ts(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _fmt_in(seconds: float) -> str:
    s = int(round(seconds))
    if s < 0:
        return f"{-s}s ago"
    if s < 120:
        return f"in {s}s"
    if s < 7200:
        return f"in {s // 60}m"
    return f"in {s // 3600}h{(s % 3600) // 60:02d}m"


class Offer:
    """Messages a pending check just offered, the rooms they came through, and the one-line nudge."""

    __slots__ = ("session", "messages", "rooms", "nudge")

    def __init__(self, session: str, messages: list[dict], rooms: list[str], nudge: str):
        self.session, self.messages, self.rooms, self.nudge = session, messages, rooms, nudge

    def __repr__(self) -> str:
        return f"Offer({self.session!r}, {len(self.messages)} messages, {self.nudge!r})"


class Room:
    def __init__(self, conn: sqlite3.Connection, clock: Callable[[], float] = time.time):
        self.conn = conn
        self.clock = clock

    @classmethod
    def open(cls, path: Path | str | None = None, clock: Callable[[], float] = time.time) -> "Room":
        return cls(connect(path), clock)

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------------ helpers
    def _event(self, kind: str, session: str | None, **data: Any) -> None:
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

    # -------------------------------------------------------------------- join
    def join(
        self,
        *,
        session: str | None = None,
        rooms: Iterable[str] | None = None,
        label: str | None = None,
        tags: Iterable[str] | None = None,
        autonomy: Any = None,
        harness: str | None = None,
        harness_key: str | None = None,
        cwd: str | None = None,
        pid: int | None = None,
        repo_room: bool = True,
        raise_only: bool = False,
    ) -> dict:
        """Join (or rejoin) a session to its repo room and any shared rooms.

        ``autonomy=None`` means "not given": a rejoin keeps the stored level. A
        given level below the stored one lowers it, with a warning; with
        ``raise_only`` (hooks re-running on resume) a lower level is ignored.
        """
        level = parse_autonomy(autonomy)
        try:
            wanted = [normalize_room(r) for r in (rooms or []) if r and r.strip()]
        except NameError_ as exc:
            raise RoomError(str(exc)) from None
        # A rejoin by session id without an explicit cwd keeps the session where it is: the
        # caller's own directory (another repository, perhaps) says nothing about that chat.
        keep_place = bool(session) and not cwd
        if not keep_place:
            cwd = cwd or os.getcwd()
            repo, repo_root = repo_of(cwd) if repo_room else (None, None)
        else:
            repo = repo_root = None
        ppid, pstart, pmarker = liveness.identity(pid)
        now = self.clock()
        warnings: list[str] = []
        with immediate(self.conn):
            row = None
            if session:
                row = self.session_row(session)
                if keep_place:
                    cwd = row["cwd"]
                    repo, repo_root = (row["repo"], row["repo_root"]) if repo_room else (None, None)
            elif harness_key:
                row = self.conn.execute(
                    "SELECT * FROM sessions WHERE harness_key=? AND coalesce(harness,'')=coalesce(?, '') "
                    "ORDER BY last_seen DESC LIMIT 1",
                    (harness_key, harness),
                ).fetchone()
            if row is None and not session and ppid is not None and pstart is not None:
                # the same chat (same harness process) joining through another door: the MCP server
                # and the hooks are both children of the harness. A row with another harness key is
                # another chat of that process (e.g. after /clear) and is left alone.
                row = self.conn.execute(
                    "SELECT * FROM sessions WHERE pid=? AND pid_start=? AND ended_at IS NULL "
                    "AND (? IS NULL OR harness IS NULL OR harness=?) "
                    "AND (? IS NULL OR harness_key IS NULL OR harness_key=?) ORDER BY last_seen DESC LIMIT 1",
                    (ppid, pstart, harness, harness, harness_key, harness_key),
                ).fetchone()
            if row is None:
                sid = self._new_id()
                self.conn.execute(
                    "INSERT INTO sessions(id, harness, harness_key, label, cwd, repo, repo_root, pid, pid_start, "
                    "env_marker, tags, autonomy, created_at, last_seen) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        sid, harness, harness_key, label, cwd, repo, repo_root, ppid, pstart, pmarker,
                        json.dumps(sorted(set(tags or []))), level if level is not None else NOTIFY, now, now,
                    ),
                )
                new = True
                current_level = level if level is not None else NOTIFY
            else:
                sid = row["id"]
                new = False
                current_level = row["autonomy"]
                if level is not None and raise_only and level < current_level:
                    level = None
                if level is not None and level != current_level:
                    if level < current_level:
                        warnings.append(
                            f"autonomy lowered from {AUTONOMY_NAMES[current_level]} to {AUTONOMY_NAMES[level]}"
                            + (": below wake, a message cannot start a turn in this chat while it is idle" if level < WAKE else "")
                        )
                    current_level = level
                sets = {
                    "last_seen": now,
                    "ended_at": None,
                    "autonomy": current_level,
                    # a rejoin from outside any repository keeps the cwd its repo room came from
                    "cwd": cwd if (repo or not row["repo"]) else row["cwd"],
                }
                if repo:
                    sets["repo"], sets["repo_root"] = repo, repo_root
                if label is not None:
                    sets["label"] = label
                if tags is not None:
                    sets["tags"] = json.dumps(sorted(set(tags)))
                if harness and not row["harness"]:
                    sets["harness"] = harness
                if harness_key and not row["harness_key"]:
                    sets["harness_key"] = harness_key
                if ppid is not None:
                    sets["pid"], sets["pid_start"], sets["env_marker"] = ppid, pstart, pmarker
                cols = ", ".join(f"{k}=?" for k in sets)
                self.conn.execute(f"UPDATE sessions SET {cols} WHERE id=?", (*sets.values(), sid))
            targets = ([repo] if repo else []) + wanted
            for name in dict.fromkeys(targets):
                rid = self._room_id(name)
                self.conn.execute(
                    "INSERT OR IGNORE INTO memberships(session_id, room_id, joined_at) VALUES (?,?,?)", (sid, rid, now)
                )
            self._event("join", sid, rooms=targets, new=new, autonomy=current_level)
            my_rooms = self._rooms_of(sid)
            pending = self.conn.execute(
                "SELECT count(*) FROM deliveries d JOIN messages m ON m.id=d.message_id WHERE d.recipient=? "
                "AND d.state IN ('stored','offered') AND (m.expires_at IS NULL OR m.expires_at > ?)",
                (sid, now),
            ).fetchone()[0]
        if not repo and repo_room:
            warnings.append(f"{cwd} is not inside a git repository, so no repo: room was joined")
        others = self.who(session=sid)["sessions"]
        others = [o for o in others if o["session"] != sid]
        return {
            "session": sid,
            "new": new,
            "label": label if label is not None else (row["label"] if row is not None else None),
            "repo": repo or (row["repo"] if row is not None else None),
            "rooms": my_rooms,
            "autonomy": AUTONOMY_NAMES[current_level],
            "unread": pending,
            "others": [
                {k: o[k] for k in ("session", "label", "repo", "state", "rooms")} for o in others
            ],
            "warnings": warnings,
            "note": f"pass session={sid!r} to every agents-room tool",
        }

    def _new_id(self) -> str:
        while True:
            sid = "s-" + os.urandom(4).hex()
            if self.conn.execute("SELECT 1 FROM sessions WHERE id=?", (sid,)).fetchone() is None:
                return sid

    def leave(self, session: str, rooms: Iterable[str] | None = None) -> dict:
        """Leave the given rooms, or end the session (all rooms, all leases) when none are given."""
        now = self.clock()
        with immediate(self.conn):
            row = self.session_row(session)
            sid = row["id"]
            if rooms:
                left = []
                for r in rooms:
                    name = r.strip()
                    rid = self._room_id(name, create=False)
                    if rid is None:
                        try:
                            rid = self._room_id(normalize_room(name), create=False)
                            name = normalize_room(name)
                        except NameError_:
                            rid = None
                    if rid is not None:
                        cur = self.conn.execute("DELETE FROM memberships WHERE session_id=? AND room_id=?", (sid, rid))
                        if cur.rowcount:
                            left.append(name)
                self._event("leave", sid, rooms=left)
                return {"session": sid, "left": left, "rooms": self._rooms_of(sid), "ended": False}
            released = self.conn.execute("DELETE FROM leases WHERE session_id=?", (sid,)).rowcount
            self.conn.execute("DELETE FROM memberships WHERE session_id=?", (sid,))
            self.conn.execute("UPDATE sessions SET ended_at=?, last_seen=? WHERE id=?", (now, now, sid))
            self._event("end", sid, released=released)
            return {"session": sid, "left": "all", "rooms": [], "ended": True, "leases_released": released}

    def end(self, session: str) -> dict:
        """Session ended (SessionEnd hook): release leases, keep memberships and mail for a resume."""
        now = self.clock()
        with immediate(self.conn):
            row = self.session_row(session)
            released = self.conn.execute("DELETE FROM leases WHERE session_id=?", (row["id"],)).rowcount
            self.conn.execute("UPDATE sessions SET ended_at=?, last_seen=?, wake_waiter=NULL WHERE id=?", (now, now, row["id"]))
            self._event("end", row["id"], released=released)
        return {"session": row["id"], "ended": True, "leases_released": released}

    # --------------------------------------------------------------------- who
    def who(self, session: str | None = None, room: str | None = None, include_ended: bool = False) -> dict:
        params: list[Any] = []
        where = []
        if session is not None:
            row = self.session_row(session)
            where.append(
                "s.id IN (SELECT m2.session_id FROM memberships m2 WHERE m2.room_id IN "
                "(SELECT room_id FROM memberships WHERE session_id=?))"
            )
            params.append(row["id"])
        if room is not None:
            rid = self._room_id(room, create=False)
            if rid is None:
                try:
                    rid = self._room_id(normalize_room(room), create=False)
                except NameError_:
                    rid = None
            if rid is None:
                return {"sessions": [], "note": f"no room named {room!r}"}
            where.append("s.id IN (SELECT session_id FROM memberships WHERE room_id=?)")
            params.append(rid)
        if not include_ended:
            where.append("s.ended_at IS NULL")
        sql = "SELECT s.* FROM sessions s" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY s.last_seen DESC"
        out = []
        now = self.clock()
        for r in self.conn.execute(sql, params).fetchall():
            leases = self.conn.execute(
                "SELECT pattern, mode, repo, expires_at FROM leases WHERE session_id=? AND expires_at>?", (r["id"], now)
            ).fetchall()
            out.append(
                {
                    "session": r["id"],
                    "label": r["label"],
                    "harness": r["harness"],
                    "repo": r["repo"],
                    "cwd": r["cwd"],
                    "rooms": self._rooms_of(r["id"]),
                    "state": self.session_state(r),
                    "pid": r["pid"],
                    "autonomy": AUTONOMY_NAMES.get(r["autonomy"], str(r["autonomy"])),
                    "tags": json.loads(r["tags"] or "[]"),
                    "last_seen": _fmt_ts(r["last_seen"]),
                    "leases": [dict(x) | {"expires_at": _fmt_ts(x["expires_at"])} for x in leases],
                }
            )
        return {"sessions": out}

    # -------------------------------------------------------------------- send
    def _resolve(self, sid: str, selector: str, room: str | None) -> tuple[set[str], list[str]]:
        """Recipients of one selector; and notes on why some matched nobody."""
        sel = selector.strip()
        notes: list[str] = []
        now = self.clock()
        if room is not None:
            rid = self._room_id(room, create=False)
            if rid is None:
                try:
                    rid = self._room_id(normalize_room(room), create=False)
                except NameError_ as exc:
                    raise RoomError(str(exc)) from None
            if rid is None or not self.conn.execute(
                "SELECT 1 FROM memberships WHERE session_id=? AND room_id=?", (sid, rid)
            ).fetchone():
                raise RoomError(f"you are not in room {room!r}; your rooms: {', '.join(self._rooms_of(sid)) or 'none'}")
            scope_sql = "SELECT session_id FROM memberships WHERE room_id=?"
            scope_params: tuple = (rid,)
        else:
            scope_sql = (
                "SELECT m2.session_id FROM memberships m2 WHERE m2.room_id IN "
                "(SELECT room_id FROM memberships WHERE session_id=?)"
            )
            scope_params = (sid,)
        if sel in ("*", "all", "@all"):
            rows = self.conn.execute(
                f"SELECT DISTINCT s.id FROM sessions s WHERE s.id IN ({scope_sql}) AND s.id<>? AND s.ended_at IS NULL",
                (*scope_params, sid),
            ).fetchall()
            if not rows:
                notes.append("nobody else is in " + (room or "your rooms"))
            return {r[0] for r in rows}, notes
        if sel.startswith("tag:"):
            tag = sel[4:].strip()
            rows = self.conn.execute(
                f"SELECT s.id, s.tags FROM sessions s WHERE s.id IN ({scope_sql}) AND s.id<>? AND s.ended_at IS NULL",
                (*scope_params, sid),
            ).fetchall()
            got = {r[0] for r in rows if tag in json.loads(r[1] or "[]")}
            if not got:
                notes.append(f"no other session in your rooms has tag {tag!r}")
            return got, notes
        if sel.startswith("file:"):
            glob = sel[5:].strip()
            me = self.session_row(sid)
            repo = me["repo"] or ""
            if glob.startswith("repo:") and "/" in glob:
                repo, glob = glob.split("/", 1)
                pat = glob
            else:
                pat = rel_path(glob, me["repo_root"])  # lease patterns as shown: relative to the repo root
            rows = self.conn.execute(
                f"SELECT l.session_id, l.pattern, l.repo FROM leases l WHERE l.expires_at>? AND l.session_id IN ({scope_sql})",
                (now, *scope_params),
            ).fetchall()
            got = {r[0] for r in rows if r[0] != sid and r[2] == repo and globs_overlap(pat, r[1])}
            if not got:
                mine = any(r[0] == sid and r[2] == repo and globs_overlap(pat, r[1]) for r in rows)
                elsewhere = sorted({r[2] for r in rows if r[0] != sid and r[2] != repo and globs_overlap(pat, r[1])})
                notes.append(
                    f"no other session holds a lease matching {pat!r} in {repo or 'no repo'}"
                    + (" (only you hold one)" if mine else "")
                    + (f"; matching leases exist in {', '.join(elsewhere)}: address them as file:{elsewhere[0]}/{pat}" if elsewhere else "")
                )
            return got, notes
        # a session id
        target = sel[8:] if sel.startswith("session:") else sel
        row = self.conn.execute("SELECT id, ended_at FROM sessions WHERE id=?", (target,)).fetchone()
        if row is None:
            raise RoomError(
                f"selector {selector!r} matches nothing: use '*', a session id, 'file:<glob>' or 'tag:<tag>'. "
                + self._unknown_session_message(target)
            )
        if row["ended_at"] is not None:
            notes.append(f"{target} has ended; the message waits for it if that chat resumes")
        return {row["id"]}, notes

    def send(
        self,
        session: str,
        to: str | list[str],
        body: str,
        *,
        subject: str | None = None,
        ttl: float | None = None,
        room: str | None = None,
    ) -> dict:
        """Store a message in every room of the sender; one delivery per recipient.

        Zero recipients is allowed: the message is stored and the answer says so.
        """
        if not body or not body.strip():
            raise RoomError("empty message body")
        if ttl is not None and ttl <= 0:
            raise RoomError("ttl must be a positive number of seconds (omit it for a message that never expires)")
        selectors = [to] if isinstance(to, str) else list(to)
        selectors = [s.strip() for part in selectors for s in part.split(",") if s.strip()]
        if not selectors:
            raise RoomError("no recipient selector: use '*', a session id, 'file:<glob>' or 'tag:<tag>'")
        now = self.clock()
        with immediate(self.conn):
            me = self.session_row(session)
            sid = me["id"]
            recipients: set[str] = set()
            notes: list[str] = []
            for sel in selectors:
                got, n = self._resolve(sid, sel, room)
                recipients |= got
                notes += n
            recipients.discard(sid)
            text = body if not subject else f"[{subject}] {body}"
            mid = self.conn.execute(
                "INSERT INTO messages(sender, room_id, selector, body, created_at, expires_at, recipient_count, kind) "
                "VALUES (?,?,?,?,?,?,?, 'msg')",
                (sid, None, ",".join(selectors), text, now, now + ttl if ttl else None, len(recipients)),
            ).lastrowid
            rooms = self._rooms_of(sid)
            self.conn.execute(
                "INSERT INTO message_rooms(message_id, room_id) SELECT ?, room_id FROM memberships WHERE session_id=?",
                (mid, sid),
            )
            self.conn.executemany(
                "INSERT INTO deliveries(message_id, recipient, state) VALUES (?,?, 'stored')",
                [(mid, r) for r in sorted(recipients)],
            )
            self._touch(sid)
        result = {
            "message_id": mid,
            "recipients": len(recipients),
            "recipient_ids": sorted(recipients),
            "rooms": rooms,
        }
        if not recipients:
            result["note"] = "stored with 0 recipients (nobody will be nudged): " + "; ".join(dict.fromkeys(notes))
        elif notes:
            result["note"] = "; ".join(dict.fromkeys(notes))
        return result

    def notice(self, recipient: str, body: str) -> int:
        """A message from agents-room itself to one session (lease expiry, takeover)."""
        mid = self.conn.execute(
            "INSERT INTO messages(sender, selector, body, created_at, recipient_count, kind) VALUES (?,?,?,?,1,'notice')",
            (SYSTEM_SENDER, recipient, body, self.clock()),
        ).lastrowid
        self.conn.execute("INSERT INTO deliveries(message_id, recipient, state) VALUES (?,?, 'stored')", (mid, recipient))
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
        return d

    _PENDING_SQL = (
        "SELECT m.*, s.label, d.state AS dstate FROM deliveries d JOIN messages m ON m.id=d.message_id "
        "LEFT JOIN sessions s ON s.id=m.sender WHERE d.recipient=? AND d.state IN ('stored','offered') "
        "AND (m.expires_at IS NULL OR m.expires_at > ?)"
    )

    def recv(self, session: str, limit: int = 50, peek: bool = False) -> dict:
        """Return (and mark read) every unread, unexpired message; when empty, say why (R-ROOM-12)."""
        now = self.clock()
        limit = max(1, min(int(limit), 500))
        with immediate(self.conn):
            me = self.session_row(session)
            sid = me["id"]
            self._lease_notices(sid, now)  # an MCP-only client learns of expiry here too (R-ROOM-5)
            rows = self.conn.execute(self._PENDING_SQL + " ORDER BY m.id LIMIT ?", (sid, now, limit)).fetchall()
            my_rooms = set(self._rooms_of(sid))
            msgs = self._msgs(rows, my_rooms)
            if rows and not peek:
                self.conn.executemany(
                    "UPDATE deliveries SET state='read', read_at=? WHERE message_id=? AND recipient=?",
                    [(now, r["id"], sid) for r in rows],
                )
            more = self.conn.execute(
                "SELECT count(*) FROM deliveries d JOIN messages m ON m.id=d.message_id WHERE d.recipient=? "
                "AND d.state IN ('stored','offered') AND (m.expires_at IS NULL OR m.expires_at > ?)",
                (sid, now),
            ).fetchone()[0] - (0 if peek else len(rows))
            self._touch(sid)
            out: dict = {"session": sid, "messages": msgs, "remaining": max(0, more)}
            if not msgs:
                out["empty_because"] = self._why_empty(me, now)
        return out

    def _why_empty(self, me: sqlite3.Row, now: float) -> str:
        sid = me["id"]
        rooms = self._rooms_of(sid)
        if me["ended_at"] is not None:
            return f"session {sid} has ended; rejoin with room_join(session={sid!r}) to be reachable again"
        if not rooms:
            return f"session {sid} is in no rooms, so nothing can be addressed to it by '*', tag: or file:; join a room with room_join"
        c = self.conn.execute(
            "SELECT count(*), max(read_at) FROM deliveries WHERE recipient=? AND state='read'", (sid,)
        ).fetchone()
        expired = self.conn.execute(
            "SELECT count(*) FROM deliveries d JOIN messages m ON m.id=d.message_id WHERE d.recipient=? "
            "AND (d.state='expired' OR (d.state IN ('stored','offered') AND m.expires_at <= ?))",
            (sid, now),
        ).fetchone()[0]
        others = self.conn.execute(
            "SELECT count(DISTINCT m2.session_id) FROM memberships m2 JOIN sessions s ON s.id=m2.session_id "
            "WHERE s.ended_at IS NULL AND m2.session_id<>? AND m2.room_id IN (SELECT room_id FROM memberships WHERE session_id=?)",
            (sid, sid),
        ).fetchone()[0]
        unaddressed = self.conn.execute(
            "SELECT count(DISTINCT mr.message_id) FROM message_rooms mr JOIN messages m ON m.id=mr.message_id "
            "WHERE mr.room_id IN (SELECT room_id FROM memberships WHERE session_id=?) AND m.sender<>? "
            "AND m.created_at >= ? AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id=m.id AND d.recipient=?)",
            (sid, sid, me["created_at"], sid),
        ).fetchone()[0]
        parts = [f"no unread messages for {sid} in {', '.join(rooms)}"]
        if c[0]:
            parts.append(f"you are caught up: {c[0]} read, the last at {_fmt_ts(c[1])}")
        else:
            parts.append("nothing has ever been addressed to this session")
        if expired:
            parts.append(f"{expired} expired before they were read")
        if unaddressed:
            parts.append(f"{unaddressed} messages in your rooms since you joined were addressed to others (see room_history)")
        if not others:
            parts.append("nobody else is in your rooms right now")
        return "; ".join(parts)

    def unread(self, session: str) -> dict:
        now = self.clock()
        with immediate(self.conn):
            me = self.session_row(session)
            self._lease_notices(me["id"], now)
        rows = self.conn.execute(self._PENDING_SQL + " ORDER BY m.id LIMIT 200", (me["id"], now)).fetchall()
        heads = [
            {"id": r["id"], "from": r["sender"], "from_label": r["label"], "state": r["dstate"],
             "preview": r["body"][:80], "sent_at": _fmt_ts(r["created_at"])}
            for r in rows
        ]
        out = {"session": me["id"], "unread": len(heads), "messages": heads}
        if not heads:
            out["empty_because"] = self._why_empty(me, now)
        return out

    def sent(self, session: str, limit: int = 20) -> dict:
        me = self.session_row(session)
        rows = self.conn.execute(
            "SELECT m.*, NULL AS label FROM messages m WHERE m.sender=? ORDER BY m.id DESC LIMIT ?",
            (me["id"], max(1, min(int(limit), 200))),
        ).fetchall()
        out = []
        for d, r in zip(self._msgs(rows), rows):
            d["deliveries"] = {
                x["recipient"]: x["state"]
                for x in self.conn.execute("SELECT recipient, state FROM deliveries WHERE message_id=?", (r["id"],))
            }
            out.append(d)
        return {"session": me["id"], "messages": out}

    def history(self, session: str, room: str | None = None, limit: int = 50, before: int | None = None) -> dict:
        """A room's history; the room comes from the session (never from the current directory)."""
        me = self.session_row(session)
        rooms = self._rooms_of(me["id"])
        if room is None:
            if not rooms:
                raise RoomError(f"session {me['id']} is in no rooms; pass room= or join one")
            targets = rooms
        else:
            name = room.strip()
            if self._room_id(name, create=False) is None:
                try:
                    name = normalize_room(name)
                except NameError_ as exc:
                    raise RoomError(str(exc)) from None
            if self._room_id(name, create=False) is None:
                raise RoomError(f"no room named {room!r}; your rooms: {', '.join(rooms) or 'none'}")
            targets = [name]
        ids = [self._room_id(t, create=False) for t in targets]
        q = (
            "SELECT DISTINCT m.*, s.label FROM message_rooms mr JOIN messages m ON m.id=mr.message_id "
            "LEFT JOIN sessions s ON s.id=m.sender WHERE mr.room_id IN ({}) AND m.kind='msg'".format(",".join("?" * len(ids)))
        )
        params: list[Any] = list(ids)
        if before is not None:
            q += " AND m.id < ?"
            params.append(int(before))
        q += " ORDER BY m.id DESC LIMIT ?"
        params.append(max(1, min(int(limit), 500)))
        rows = self.conn.execute(q, params).fetchall()
        return {"rooms": targets, "messages": self._msgs(list(reversed(rows)))}

    # ---------------------------------------------------------- pending check
    def pending(self, session: str, event: str = "tool") -> Offer | None:
        """Offer what this session has not read (R-ROOM-8).

        ``stored`` deliveries are always offered. ``offered`` ones are offered
        again once the retry window for the event has passed (0 for tool
        events, 30 minutes for Stop), or when their offer time is in the
        future (a clock that stepped back); so no unread, unexpired delivery can
        fall out of every check.
        """
        window = RETRY_WINDOW[event]
        now = self.clock()
        with immediate(self.conn):
            me = self.session_row(session)
            sid = me["id"]
            self._lease_notices(sid, now)
            rows = self.conn.execute(
                self._PENDING_SQL
                + " AND (d.state='stored' OR d.offered_at IS NULL OR d.offered_at <= ? OR d.offered_at > ?) ORDER BY m.id",
                (sid, now, now - window, now),
            ).fetchall()
            if not rows:
                return None
            self.conn.executemany(
                "UPDATE deliveries SET state='offered', offered_at=?, offer_count=offer_count+1 "
                "WHERE message_id=? AND recipient=? AND state IN ('stored','offered')",
                [(now, r["id"], sid) for r in rows],
            )
            my_rooms = set(self._rooms_of(sid))
            msgs = self._msgs(rows, my_rooms)
        return Offer(sid, msgs, *self._nudge(sid, msgs, my_rooms))

    def _nudge(self, sid: str, msgs: list[dict], my_rooms: set[str]) -> tuple[list[str], str]:
        via: list[str] = []
        direct = False
        for m in msgs:
            hit = [r for r in m["rooms"] if r in my_rooms]
            if not hit:
                direct = True
            for r in hit:
                if r not in via:
                    via.append(r)
        senders = []
        for m in msgs:
            s = m["from_label"] or m["from"]
            if m["from_label"]:
                s = f"{m['from_label']} ({m['from']})"
            if s not in senders:
                senders.append(s)
        shown = via[:2]
        where = ", ".join(shown)
        if len(via) > 2:
            where += f" +{len(via) - 2} more"
        if direct:
            where = (where + ", " if where else "") + "direct"
        n = len(msgs)
        who = ", ".join(senders[:2]) + (f" +{len(senders) - 2} more" if len(senders) > 2 else "")
        text = (
            f"agents-room: {n} unread message{'s' if n != 1 else ''} for {sid} via {where} from {who}. "
            f'Read with msg_recv(session="{sid}").'
        )
        return via, text

    def _lease_notices(self, sid: str, now: float) -> None:
        for lease in self.conn.execute(
            "SELECT id, pattern, repo, expires_at FROM leases WHERE session_id=? AND expires_at<=? AND notified=0", (sid, now)
        ).fetchall():
            self.notice(
                sid,
                f"your {lease['repo'] or 'global'} lease on {lease['pattern']} expired at {_fmt_ts(lease['expires_at'])}; "
                "others may now take it. Renew before expiry with lease_renew, or acquire it again.",
            )
            self.conn.execute("UPDATE leases SET notified=1 WHERE id=?", (lease["id"],))

    def stop_check(
        self, session: str, *, harness: str | None, stop_hook_active: bool = False, turn_id: str | None = None
    ) -> Offer | None:
        """Should this Stop be held? Never twice in one turn; Codex also has its own cap."""
        now = self.clock()
        with immediate(self.conn):
            me = self.session_row(session)
            sid = me["id"]
            self._touch(sid)
            if me["stop_block_pending"]:
                self.conn.execute("UPDATE sessions SET stop_block_pending=0 WHERE id=?", (sid,))
                if self._stop_guard_current(me, now, turn_id):
                    # the Stop right after a block is in the same turn: always let it through
                    return None
            if me["autonomy"] < HOLD or stop_hook_active:
                return None
            blocks = [t for t in json.loads(me["stop_blocks"] or "[]") if now - t < CODEX_HOLD_WINDOW]
            if harness == "codex":
                if turn_id and me["stop_block_turn"] == turn_id:
                    return None
                if len(blocks) >= CODEX_HOLD_CAP:
                    return None
            offer = self.pending(sid, "stop")
            if offer is None:
                return None
            blocks.append(now)
            self.conn.execute(
                "UPDATE sessions SET stop_block_pending=1, stop_block_turn=?, stop_blocks=? WHERE id=?",
                (turn_id, json.dumps(blocks[-10:]), sid),
            )
            self._event("stop_hold", sid, messages=[m["id"] for m in offer.messages])
        return offer

    def _stop_guard_current(self, me: sqlite3.Row, now: float, turn_id: str | None) -> bool:
        """Is the session's "Stop already held once" flag still about the current turn?

        Not when the harness names another turn, nor when the hold is older than
        :data:`STOP_GUARD_TTL`. A hold in the future (a clock that stepped back) still counts:
        never blocking twice matters more than one missed hold.
        """
        if turn_id and me["stop_block_turn"] and turn_id != me["stop_block_turn"]:
            return False
        blocks = json.loads(me["stop_blocks"] or "[]")
        return bool(blocks) and now - blocks[-1] < STOP_GUARD_TTL

    def reset_stop_guard(self, session: str) -> None:
        """A new chat start (SessionStart): no Stop hold of an earlier turn counts any more."""
        with immediate(self.conn):
            self.conn.execute("UPDATE sessions SET stop_block_pending=0 WHERE id=?", (session,))

    def tool_seen(self, session: str, turn_id: str | None = None) -> None:
        """A tool event: the chat is busy, so any idle wake waiter stands down.

        A tool event of another turn than the last Stop hold (when the harness names
        turns) clears the stale "already held once" flag.
        """
        now = self.clock()
        with immediate(self.conn):
            self.conn.execute("UPDATE sessions SET last_seen=?, wake_waiter=NULL WHERE id=?", (now, session))
            if turn_id:
                self.conn.execute(
                    "UPDATE sessions SET stop_block_pending=0 WHERE id=? AND stop_block_pending<>0 "
                    "AND stop_block_turn IS NOT NULL AND stop_block_turn<>?",
                    (session, turn_id),
                )

    # ------------------------------------------------------------------ leases
    def _holder_desc(self, l: sqlite3.Row, now: float) -> dict:
        return {
            "pattern": l["pattern"],
            "mode": l["mode"],
            "holder": l["session_id"],
            "holder_label": l["label"],
            "repo": l["repo"] or None,
            "expires_at": _fmt_ts(l["expires_at"]),
            "expires_in": _fmt_in(l["expires_at"] - now),
        }

    def lease_acquire(self, session: str, paths: list[str] | str, mode: str = "exclusive", ttl: float | None = None) -> dict:
        """All-or-nothing: every path is granted, or none and each conflict names holder, repo and expiry."""
        if isinstance(paths, str):
            paths = [paths]
        if mode not in ("exclusive", "shared"):
            raise RoomError("mode must be 'exclusive' or 'shared'")
        ttl = float(ttl) if ttl else DEFAULT_LEASE_TTL
        if ttl <= 0 or ttl > MAX_LEASE_TTL:
            raise RoomError(f"ttl must be between 1 and {int(MAX_LEASE_TTL)} seconds")
        if not paths:
            raise RoomError("no paths given")
        now = self.clock()
        with immediate(self.conn):
            me = self.session_row(session)
            sid = me["id"]
            repo = me["repo"] or ""
            pats = [input_rel_path(p, me["repo_root"], me["cwd"]) for p in paths]
            held = self.conn.execute(
                "SELECT l.*, s.label, s.pid, s.pid_start, s.env_marker, s.ended_at FROM leases l "
                "JOIN sessions s ON s.id=l.session_id WHERE l.repo=?",
                (repo,),
            ).fetchall()
            conflicts, takeovers = [], []
            for p in pats:
                for l in held:
                    if l["session_id"] == sid or not globs_overlap(p, l["pattern"]):
                        continue
                    if mode == "shared" and l["mode"] == "shared":
                        continue
                    if l["expires_at"] <= now:
                        takeovers.append((l, "expired"))
                        continue
                    if l["ended_at"] is not None or (
                        liveness.HAS_PROC and liveness.is_alive(l["pid"], l["pid_start"], l["env_marker"]) is False
                    ):
                        takeovers.append((l, "holder gone"))
                        continue
                    conflicts.append(self._holder_desc(l, now) | {"requested": p})
            if conflicts:
                self._event("lease_conflict", sid, paths=pats, holders=sorted({c["holder"] for c in conflicts}))
                first = conflicts[0]
                return {
                    "granted": [],
                    "conflicts": conflicts,
                    "message": (
                        f"{first['requested']} conflicts with the {first['mode']} lease on {first['pattern']} held by "
                        f"{first['holder']}{' (' + first['holder_label'] + ')' if first['holder_label'] else ''} in "
                        f"{first['repo'] or 'no repo'}, expiring {first['expires_at']} ({first['expires_in']}); nothing was granted"
                    ),
                }
            seen = set()
            for l, why in takeovers:
                if l["id"] in seen:
                    continue
                seen.add(l["id"])
                self.conn.execute("DELETE FROM leases WHERE id=?", (l["id"],))
                self.notice(
                    l["session_id"],
                    f"your {l['mode']} lease on {l['pattern']} in {repo or 'no repo'} ({why}, expiry "
                    f"{_fmt_ts(l['expires_at'])}) was taken by {sid}{' (' + me['label'] + ')' if me['label'] else ''}.",
                )
                self._event("lease_takeover", sid, lease=l["id"], holder=l["session_id"], reason=why)
            granted = []
            for p in pats:
                mine = self.conn.execute(
                    "SELECT id FROM leases WHERE session_id=? AND repo=? AND pattern=?", (sid, repo, p)
                ).fetchone()
                if mine:
                    self.conn.execute(
                        "UPDATE leases SET mode=?, acquired_at=?, expires_at=?, notified=0 WHERE id=?",
                        (mode, now, now + ttl, mine[0]),
                    )
                    lid = mine[0]
                else:
                    lid = self.conn.execute(
                        "INSERT INTO leases(session_id, repo, pattern, mode, acquired_at, expires_at) VALUES (?,?,?,?,?,?)",
                        (sid, repo, p, mode, now, now + ttl),
                    ).lastrowid
                granted.append({"lease_id": lid, "pattern": p, "mode": mode, "repo": repo or None, "expires_at": _fmt_ts(now + ttl)})
            self._touch(sid)
            self._event("lease_acquire", sid, paths=pats, mode=mode)
        return {"granted": granted, "conflicts": [], "taken_over": [dict(holder=l["session_id"], pattern=l["pattern"], reason=w) for l, w in takeovers]}

    def _my_leases(self, me: sqlite3.Row, paths: list[str] | None) -> list[sqlite3.Row]:
        rows = self.conn.execute("SELECT * FROM leases WHERE session_id=?", (me["id"],)).fetchall()
        if not paths:
            return rows
        pats = {input_rel_path(p, me["repo_root"], me["cwd"]) for p in paths}
        return [r for r in rows if r["pattern"] in pats or str(r["id"]) in {str(p) for p in paths}]

    def lease_renew(self, session: str, paths: list[str] | None = None, ttl: float | None = None) -> dict:
        ttl = float(ttl) if ttl else DEFAULT_LEASE_TTL
        if ttl <= 0 or ttl > MAX_LEASE_TTL:
            raise RoomError(f"ttl must be between 1 and {int(MAX_LEASE_TTL)} seconds")
        now = self.clock()
        with immediate(self.conn):
            me = self.session_row(session)
            self._lease_notices(me["id"], now)  # told of an expiry even when renewing after it
            rows = self._my_leases(me, paths)
            renewed, lost = [], []
            for r in rows:
                self.conn.execute("UPDATE leases SET expires_at=?, notified=0 WHERE id=?", (now + ttl, r["id"]))
                renewed.append({"lease_id": r["id"], "pattern": r["pattern"], "expires_at": _fmt_ts(now + ttl),
                                "was_expired": r["expires_at"] <= now})
            if paths:
                have = {r["pattern"] for r in rows} | {str(r["id"]) for r in rows}
                for p in paths:
                    if input_rel_path(p, me["repo_root"], me["cwd"]) not in have and str(p) not in have:
                        ev = self.conn.execute(
                            "SELECT session_id, data FROM events WHERE kind='lease_takeover' AND data LIKE ? ORDER BY id DESC LIMIT 1",
                            (f'%"holder": "{me["id"]}"%',),
                        ).fetchone()
                        lost.append({"pattern": p, "reason": "you hold no lease on it"
                                     + (f"; your last lease taken over was taken by {ev['session_id']}" if ev else "")})
            self._event("lease_renew", me["id"], n=len(renewed))
        out: dict = {"renewed": renewed}
        if lost:
            out["not_held"] = lost
        return out

    def lease_release(self, session: str, paths: list[str] | None = None) -> dict:
        with immediate(self.conn):
            me = self.session_row(session)
            rows = self._my_leases(me, paths)
            for r in rows:
                self.conn.execute("DELETE FROM leases WHERE id=?", (r["id"],))
            self._event("lease_release", me["id"], n=len(rows))
        return {"released": [r["pattern"] for r in rows]}

    def leases_against(self, session: str, path: str) -> list[dict]:
        """Live leases held by others that cover ``path`` (for the PreToolUse warning)."""
        now = self.clock()
        me = self.session_row(session)
        p = input_rel_path(path, me["repo_root"], me["cwd"])
        rows = self.conn.execute(
            "SELECT l.*, s.label FROM leases l JOIN sessions s ON s.id=l.session_id "
            "WHERE l.repo=? AND l.session_id<>? AND l.expires_at>? AND s.ended_at IS NULL",
            (me["repo"] or "", me["id"], now),
        ).fetchall()
        return [self._holder_desc(l, now) for l in rows if glob_matches(l["pattern"], p)]

    # -------------------------------------------------------------- divergence
    def file_read(self, session: str, path: str, content_hash: str | None = None, wrote: bool = False) -> dict:
        """Record the hash of what this session read (or wrote) at ``path``."""
        now = self.clock()
        me = self.session_row(session)
        full = abs_path(path, me["repo_root"], me["cwd"])
        h = content_hash or file_hash(full)
        if h is None:
            raise RoomError(f"cannot read {full}: no such file (or not readable)")
        rel = rel_path(full, me["repo_root"])
        with immediate(self.conn):
            self.conn.execute(
                "INSERT INTO reads(session_id, repo, path, hash, read_at) VALUES (?,?,?,?,?) "
                "ON CONFLICT(session_id, repo, path) DO UPDATE SET hash=excluded.hash, read_at=excluded.read_at",
                (me["id"], me["repo"] or "", rel, h, now),
            )
            self._touch(me["id"])
        return {"path": rel, "repo": me["repo"], "hash": h, "recorded": True}

    def file_check(self, session: str, paths: list[str] | None = None) -> dict:
        """For each path this session read: has it changed since, and by whom (R-ROOM-6)."""
        me = self.session_row(session)
        repo = me["repo"] or ""
        if paths:
            rels = [rel_path(abs_path(p, me["repo_root"], me["cwd"]), me["repo_root"]) for p in paths]
            rows = [
                self.conn.execute(
                    "SELECT * FROM reads WHERE session_id=? AND repo=? AND path=?", (me["id"], repo, r)
                ).fetchone()
                or {"path": r, "hash": None, "read_at": None}
                for r in rels
            ]
        else:
            rows = self.conn.execute("SELECT * FROM reads WHERE session_id=? AND repo=?", (me["id"], repo)).fetchall()
        out = []
        for r in rows:
            path = r["path"]
            cur = file_hash(stored_abs_path(path, me["repo_root"], me["cwd"]))
            item: dict = {"path": path, "read_hash": r["hash"], "current_hash": cur, "read_at": _fmt_ts(r["read_at"])}
            if r["hash"] is None:
                item["status"] = "never-read"
                item["message"] = f"{path}: you have no recorded read; call file_read after reading it"
            elif cur == r["hash"]:
                item["status"] = "same"
            else:
                item["status"] = "deleted" if cur is None else "changed"
                by = self.conn.execute(
                    "SELECT r.session_id, s.label, s.repo FROM reads r LEFT JOIN sessions s ON s.id=r.session_id "
                    "WHERE r.repo=? AND r.path=? AND r.session_id<>? AND r.hash IS ? ORDER BY r.read_at DESC LIMIT 1",
                    (repo, path, me["id"], cur),
                ).fetchone() if cur else None
                if by:
                    item["changed_by"] = by["session_id"]
                    item["message"] = (
                        f"{path} changed since you read it, by {by['session_id']}"
                        + (f" ({by['label']})" if by["label"] else "")
                        + f"/{by['repo'] or repo or 'no repo'}"
                    )
                else:
                    item["message"] = f"{path} {'was deleted' if cur is None else 'changed'} since you read it, by someone outside agents-room"
            out.append(item)
        diverged = [x for x in out if x["status"] in ("changed", "deleted")]
        return {"session": me["id"], "files": out, "diverged": len(diverged)}

    # ----------------------------------------------------------------- doctor
    def doctor(self, fix: bool = False) -> dict:
        now = self.clock()
        report: dict = {"ok": True, "problems": [], "fixed": []}
        ic = self.conn.execute("PRAGMA quick_check").fetchall()
        report["integrity"] = "ok" if [r[0] for r in ic] == ["ok"] else [r[0] for r in ic][:20]
        if report["integrity"] != "ok":
            report["ok"] = False
            report["problems"].append("database integrity check failed")
        v = schema_version(self.conn)
        report["schema_version"] = {"found": v, "expected": SCHEMA_VERSION}
        if v != SCHEMA_VERSION:
            report["ok"] = False
            report["problems"].append(f"schema version {v}, expected {SCHEMA_VERSION}")
        fk = self.conn.execute("PRAGMA foreign_key_check").fetchall()
        if fk:
            report["ok"] = False
            report["problems"].append(f"{len(fk)} rows violate foreign keys")
        # split rooms: two rows that normalise to one name
        groups: dict[str, list[str]] = {}
        for (name,) in self.conn.execute("SELECT name FROM rooms"):
            groups.setdefault(legacy_key(name), []).append(name)
        splits, legacy_only = [], []
        for canon, names in sorted(groups.items()):
            if len(names) < 2:
                continue
            for legacy in sorted(n for n in names if n != canon):
                members = [
                    r[0]
                    for r in self.conn.execute(
                        "SELECT m.session_id FROM memberships m JOIN rooms r ON r.id=m.room_id JOIN sessions s ON s.id=m.session_id "
                        "WHERE r.name=? AND s.ended_at IS NULL",
                        (legacy,),
                    )
                ]
                if not members:
                    # nobody left in the old name: only its history remains there
                    legacy_only.append({"room": canon, "old_name": legacy})
                    continue
                splits.append(
                    {
                        "room": canon,
                        "split_from": legacy,
                        "sessions": members,
                        "fix": [
                            [f"agents-room leave --session {s} --room {legacy}", f"agents-room join --session {s} --room {canon}"]
                            for s in members
                        ],
                        "note": "not fixed automatically: moving a session between rooms is the session's decision",
                    }
                )
        report["split_rooms"] = splits
        report["legacy_room_names"] = legacy_only
        if splits:
            report["problems"].append(f"{len(splits)} split room(s): see split_rooms for the two commands that fix each")
        # duplicate chats: live rows for the same harness chat
        dups = self.conn.execute(
            "SELECT harness, harness_key, group_concat(id) AS ids FROM sessions WHERE ended_at IS NULL AND harness_key IS NOT NULL "
            "GROUP BY harness, harness_key HAVING count(*) > 1"
        ).fetchall()
        # one harness process: the same chat only when the harness keys agree (or both are missing);
        # a row with another key is another chat of that process (e.g. after /clear), as join treats it
        dups += self.conn.execute(
            "SELECT harness, pid AS harness_key, group_concat(id) AS ids FROM sessions WHERE ended_at IS NULL AND pid IS NOT NULL "
            "AND pid_start IS NOT NULL GROUP BY harness, pid, pid_start, coalesce(harness_key, '') HAVING count(*) > 1"
        ).fetchall()
        dup_list = []
        for d in dups:
            ids = d["ids"].split(",")
            rows = sorted(
                (self.conn.execute("SELECT * FROM sessions WHERE id=?", (i,)).fetchone() for i in ids),
                key=lambda r: r["last_seen"],
            )
            keep, drop = rows[-1]["id"], [r["id"] for r in rows[:-1] if r["id"] != rows[-1]["id"]]
            if not drop:
                continue
            dup_list.append({"keep": keep, "duplicates": drop})
            if fix:
                with immediate(self.conn):
                    for old in drop:
                        self.conn.execute(
                            "INSERT OR IGNORE INTO deliveries(message_id, recipient, state, offered_at, offer_count) "
                            "SELECT message_id, ?, 'stored', NULL, 0 FROM deliveries WHERE recipient=? AND state IN ('stored','offered')",
                            (keep, old),
                        )
                        self.conn.execute(
                            "UPDATE deliveries SET state='read', read_at=? WHERE recipient=? AND state IN ('stored','offered')",
                            (now, old),
                        )
                        self.conn.execute("UPDATE leases SET session_id=? WHERE session_id=?", (keep, old))
                        self.conn.execute("UPDATE sessions SET ended_at=? WHERE id=?", (now, old))
                        self._event("doctor_collapse", old, into=keep)
                report["fixed"].append(f"collapsed duplicate chat rows {drop} into {keep} (unread mail moved)")
        report["duplicate_chats"] = dup_list
        if dup_list and not fix:
            report["problems"].append(f"{len(dup_list)} chat(s) with duplicate session rows (doctor --fix collapses them)")
        # stale deliveries
        stale = self.conn.execute(
            "SELECT d.recipient, count(*) AS n, min(d.offered_at) AS oldest FROM deliveries d JOIN messages m ON m.id=d.message_id "
            "WHERE d.state='offered' AND d.offered_at < ? AND (m.expires_at IS NULL OR m.expires_at > ?) GROUP BY d.recipient",
            (now - STALE_OFFER_AFTER, now),
        ).fetchall()
        report["stale_deliveries"] = [
            {"recipient": r["recipient"], "offered_unread": r["n"], "oldest_offer": _fmt_ts(r["oldest"])} for r in stale
        ]
        if stale:
            report["problems"].append(
                f"{sum(r['n'] for r in stale)} deliveries offered over an hour ago and still unread"
            )
        expired_open = self.conn.execute(
            "SELECT count(*) FROM deliveries d JOIN messages m ON m.id=d.message_id WHERE d.state IN ('stored','offered') "
            "AND m.expires_at IS NOT NULL AND m.expires_at <= ?",
            (now,),
        ).fetchone()[0]
        report["expired_unread"] = expired_open
        if fix and expired_open:
            with immediate(self.conn):
                self.conn.execute(
                    "UPDATE deliveries SET state='expired' WHERE state IN ('stored','offered') AND message_id IN "
                    "(SELECT id FROM messages WHERE expires_at IS NOT NULL AND expires_at <= ?)",
                    (now,),
                )
            report["fixed"].append(f"marked {expired_open} expired deliveries as expired")
        # live sessions below wake
        below = []
        for r in self.conn.execute("SELECT * FROM sessions WHERE ended_at IS NULL AND autonomy < ?", (WAKE,)).fetchall():
            if self.session_state(r) == "live":
                below.append({"session": r["id"], "label": r["label"], "harness": r["harness"],
                              "autonomy": AUTONOMY_NAMES.get(r["autonomy"]),
                              "fix": f"agents-room join --session {r['id']} --autonomy wake"})
        report["below_wake"] = below
        if below:
            report["problems"].append(
                f"{len(below)} live session(s) below wake: a message cannot start a turn in them while idle"
            )
        if report["problems"] and report["ok"]:
            report["ok"] = not any(p.startswith(("database", "schema")) for p in report["problems"])
        return report

    def maybe_prune(self, every: float = AUTO_PRUNE_EVERY) -> dict | None:
        """Prune when the last prune is older than ``every``: run from SessionStart, so no timer is needed."""
        last = self.conn.execute("SELECT max(at) FROM events WHERE kind='prune'").fetchone()[0]
        if last is not None and self.clock() - last < every:
            return None
        return self.prune()

    def prune(self, dry_run: bool = False) -> dict:
        """Delete expired messages, long-gone sessions (never one without a pid) and old events."""
        now = self.clock()
        with immediate(self.conn):
            expired = self.conn.execute(
                "SELECT count(*) FROM messages WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
            ).fetchone()[0]
            gone = []
            for r in self.conn.execute(
                "SELECT * FROM sessions WHERE pid IS NOT NULL AND last_seen < ?", (now - GONE_PRUNE_AFTER,)
            ).fetchall():
                st = self.session_state(r)
                if st in ("gone", "ended"):
                    gone.append(r["id"])
            events = self.conn.execute("SELECT count(*) FROM events WHERE at < ?", (now - EVENTS_PRUNE_AFTER,)).fetchone()[0]
            if not dry_run:
                self.conn.execute("DELETE FROM messages WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,))
                for sid in gone:
                    self.conn.execute("DELETE FROM deliveries WHERE recipient=?", (sid,))
                    self.conn.execute("DELETE FROM sessions WHERE id=?", (sid,))
                self.conn.execute("DELETE FROM events WHERE at < ?", (now - EVENTS_PRUNE_AFTER,))
                self.conn.execute(
                    "DELETE FROM rooms WHERE id NOT IN (SELECT room_id FROM memberships) "
                    "AND id NOT IN (SELECT room_id FROM message_rooms)"
                )
                self._event("prune", None, messages=expired, sessions=len(gone), events=events)
        return {"dry_run": dry_run, "expired_messages": expired, "gone_sessions": gone, "old_events": events}
