"""Messaging: addressing (R-ROOM-7), send, receive, unread, sent, history (R-ROOM-12).
"""

from __future__ import annotations

import json
import sqlite3


TYPE_CHECKING = False  # typing is not imported at run time: the hook runs on every tool call
if TYPE_CHECKING:
    from typing import Any
from .naming import (
    NameError_,
    globs_overlap,
    normalize_room,
    rel_path,
)
from .store import immediate
from .queries import MAX_MESSAGE_TTL, RoomBase, RoomError, _fmt_ts, check_ttl


class Messaging(RoomBase):
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
        ttl = check_ttl(ttl, "ttl", MAX_MESSAGE_TTL)  # omit it for a message that never expires
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


    def latest_message_id(self) -> int:
        return self.conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]

    def messages_after(self, after: int, rooms: list[str] | None = None, limit: int = 500) -> list[dict]:
        """Messages with an id above ``after`` (in ``rooms`` when given), oldest first: for `watch`."""
        q = (
            "SELECT DISTINCT m.*, s.label FROM messages m LEFT JOIN sessions s ON s.id=m.sender "
            "LEFT JOIN message_rooms mr ON mr.message_id=m.id LEFT JOIN rooms r ON r.id=mr.room_id WHERE m.id > ?"
        )
        params: list[Any] = [after]
        if rooms:
            q += " AND r.name IN ({})".format(",".join("?" * len(rooms)))
            params += rooms
        rows = self.conn.execute(q + " ORDER BY m.id LIMIT ?", (*params, limit)).fetchall()
        return self._msgs(rows)
