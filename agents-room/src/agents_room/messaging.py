"""Messaging: addressing (R-ROOM-7, R-ROOM-18), send, receive, unread, sent, history (R-ROOM-12);
replies join a thread and bodies and receives are bounded (R-ROOM-16).
"""

from __future__ import annotations


from .sqlite_api import sqlite3
from .naming import (
    InvalidName,
    globs_overlap,
    normalize_room,
    rel_path,
)
from .store import immediate
from .queries import (IMPORTANCE, MAX_BODY_BYTES, MAX_MESSAGE_TTL, MAX_RECV_BYTES, UNREAD_COUNT_CAP, RoomBase, RoomError,
                      _fmt_ts, check_ttl)

#: msg_unread previews the oldest this many (the count beside them goes on to UNREAD_COUNT_CAP)
UNREAD_PREVIEWS = 200

TYPE_CHECKING = False  # typing is not imported at run time: the hook runs on every tool call
if TYPE_CHECKING:
    from typing import Any


def _bad_glob(glob: str) -> str | None:
    """Why ``glob`` can match no path (an unclosed '[', a NUL), or None."""
    if "\x00" in glob:
        return "it contains a NUL character"
    i = 0
    while i < len(glob):
        if glob[i] == "[":
            j = glob.find("]", i + 2)
            if j == -1:
                return f"the '[' at position {i} is never closed (write [[] for a literal '[')"
            i = j
        i += 1
    return None


def _selectors(to: str | list[str] | None) -> list[str]:
    parts = [to] if isinstance(to, str) else list(to or [])
    return [s.strip() for part in parts for s in str(part).split(",") if s.strip()]


def _is_direct(selectors: list[str]) -> bool:
    """Addressed to sessions by id only: shown in room history to its sender and recipients alone."""
    return bool(selectors) and all(s.startswith(("s-", "session:")) for s in selectors)


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
                except InvalidName as exc:
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
            if not tag:
                raise RoomError("selector 'tag:' names no tag: write tag:<tag>, e.g. tag:frontend")
            rows = self.conn.execute(
                f"SELECT s.id, s.tags FROM sessions s WHERE s.id IN ({scope_sql}) AND s.id<>? AND s.ended_at IS NULL",
                (*scope_params, sid),
            ).fetchall()
            import json  # here, not at the top: json imports re and enum, which the hooks' path does without

            got = {r[0] for r in rows if tag in json.loads(r[1] or "[]")}
            if not got:
                notes.append(f"no other session in your rooms has tag {tag!r}")
            return got, notes
        if sel.startswith("file:"):
            glob = sel[5:].strip()
            me = self.session_row(sid)
            repo = me["repo"] or ""
            if not glob:
                raise RoomError("selector 'file:' names no path: write file:<glob>, e.g. file:src/api/**")
            if glob.startswith("repo:"):
                if "/" not in glob or not glob.split("/", 1)[1].strip():
                    raise RoomError(f"selector {sel!r} names no path: write file:repo:<name>/<glob>")
                repo, glob = glob.split("/", 1)
                if not self.conn.execute("SELECT 1 FROM sessions WHERE repo=? LIMIT 1", (repo,)).fetchone():
                    known = [r[0] for r in self.conn.execute(
                        "SELECT DISTINCT repo FROM sessions WHERE repo IS NOT NULL ORDER BY repo LIMIT 20")]
                    raise RoomError(f"selector {sel!r}: no session has ever been in {repo}; known repos: "
                                    + (", ".join(known) or "none"))
            bad = _bad_glob(glob)
            if bad:
                raise RoomError(f"selector {sel!r} is not a valid glob: {bad}")
            if repo != (me["repo"] or "") or glob.startswith("repo:"):
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
        to: str | list[str] | None,
        body: str,
        *,
        subject: str | None = None,
        ttl: float | None = None,
        room: str | None = None,
        reply_to: int | None = None,
        importance: str | None = None,
        ack_required: bool = False,
    ) -> dict:
        """Store a message in every room of the sender; one delivery per recipient.

        Zero recipients is allowed (a broadcast in a room of one) and said; a selector that can match
        nobody is an error (R-ROOM-18). A reply (``reply_to``) joins that message's thread and also
        reaches the thread's participants; ``to`` may then be omitted (R-ROOM-16).
        """
        if not isinstance(body, str) or not body.strip():
            raise RoomError("empty message body")
        size = len(body.encode("utf-8", "surrogatepass"))
        if size > MAX_BODY_BYTES:
            raise RoomError(
                f"message body is {size} bytes, over the limit of {MAX_BODY_BYTES} (AGENTS_ROOM_MAX_BODY): "
                "send a summary and point to a file or commit for the rest"
            )
        ttl = check_ttl(ttl, "ttl", MAX_MESSAGE_TTL)  # omit it for a message that never expires
        level = (importance or "normal").strip().lower()
        if level not in IMPORTANCE:
            raise RoomError(f"importance must be one of {', '.join(IMPORTANCE)}, not {importance!r}")
        selectors = _selectors(to)
        if not selectors and reply_to is None:
            raise RoomError("no recipient selector: use '*' (or all), a session id, 'file:<glob>' or 'tag:<tag>'")
        now = self.clock()
        with immediate(self.conn):
            me = self.session_row(session)
            sid = me["id"]
            if me["ended_at"] is not None:
                raise RoomError(f"session {sid} has ended; rejoin with room_join(session={sid!r}) before sending")
            recipients: set[str] = set()
            notes: list[str] = []
            thread_id = None
            if reply_to is not None:
                parent = self._visible_message(me, reply_to)
                thread_id = parent["thread_id"] or parent["id"]
                recipients |= self.thread_participants(thread_id)
            for sel in selectors:
                got, n = self._resolve(sid, sel, room)
                recipients |= got
                notes += n
            recipients.discard(sid)
            text = body if not subject else f"[{subject}] {body}"
            mid = self.conn.execute(
                "INSERT INTO messages(sender, room_id, selector, body, created_at, expires_at, recipient_count, kind, "
                "thread_id, reply_to, importance, ack_required, direct) VALUES (?,?,?,?,?,?,?, 'msg', ?,?,?,?,?)",
                (sid, None, ",".join(selectors) or f"thread:{thread_id}", text, now, now + ttl if ttl else None,
                 len(recipients), thread_id, reply_to, level, 1 if ack_required else 0,
                 1 if (_is_direct(selectors) or (reply_to is not None and not selectors)) else 0),
            ).lastrowid
            if thread_id is None:
                self.conn.execute("UPDATE messages SET thread_id=id WHERE id=?", (mid,))
            rooms = self._rooms_of(sid)
            self.conn.execute(
                "INSERT INTO message_rooms(message_id, room_id) SELECT ?, room_id FROM memberships WHERE session_id=?",
                (mid, sid))
            self.conn.executemany("INSERT INTO deliveries(message_id, recipient, state) VALUES (?,?, 'stored')",
                                  [(mid, r) for r in sorted(recipients)])
            self._ring_all(recipients)  # (once this commits) their hooks start Python again
            self._touch(sid)
        result = {
            "message_id": mid,
            "thread": thread_id or mid,
            "recipients": len(recipients),
            "recipient_ids": sorted(recipients),
            "rooms": rooms,
        }
        if level != "normal":
            result["importance"] = level
        if ack_required:
            result["ack_required"] = True
        if not recipients:
            result["note"] = "stored with 0 recipients (nobody will be nudged): " + (
                "; ".join(dict.fromkeys(notes)) or "only you are in this thread")
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
            rows = self.conn.execute(self._PENDING_SQL + " ORDER BY d.message_id LIMIT ?", (sid, now, limit)).fetchall()
            # bounded in bytes too (R-ROOM-16): one huge backlog must not flood a model's context
            budget, kept = MAX_RECV_BYTES, []
            for r in rows:
                size = len(r["body"].encode("utf-8", "surrogatepass"))
                if kept and size > budget:
                    break
                kept.append(r)
                budget -= size
            cut = len(kept) < len(rows)
            rows = kept
            my_rooms = set(self._rooms_of(sid))
            msgs = self._msgs(rows, my_rooms)
            if rows and not peek:
                self.conn.executemany(
                    "UPDATE deliveries SET state='read', read_at=? WHERE message_id=? AND recipient=?",
                    [(now, r["id"], sid) for r in rows],
                )
            # rows just read are no longer counted; a peek's rows still are, so it counts past them
            seen = len(rows) if peek else 0
            more, over = self._unread_count(sid, now, UNREAD_COUNT_CAP + seen)
            more = max(0, more - seen)
            self._touch(sid)
            out: dict = {"session": sid, "messages": msgs, "remaining": more}
            if over:
                out["remaining_more"] = True  # `remaining` is the cap: more than that are unread
            left = f"more than {more}" if over else str(more)
            if cut:
                out["hint"] = (f"{left} more unread left unread: this answer is capped at {MAX_RECV_BYTES} bytes "
                               "(AGENTS_ROOM_MAX_RECV); call msg_recv again for the rest")
            elif over:
                out["hint"] = f"more than {more} unread remain; call msg_recv again for the next ones"
            if not msgs:
                out["empty_because"] = self._why_empty(me, now)
        if rows and not peek:
            from .bells import settle_bell

            settle_bell(self, sid)  # all read: its hooks need not start Python for it any more
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
        rows = self.conn.execute(self._PENDING_SQL + " ORDER BY d.message_id LIMIT ?",
                                 (me["id"], now, UNREAD_PREVIEWS)).fetchall()
        heads = [
            {"id": r["id"], "from": r["sender"], "from_label": r["label"], "state": r["dstate"],
             "preview": r["body"][:80], "sent_at": _fmt_ts(r["created_at"])}
            for r in rows
        ]
        count, over = (len(heads), False) if len(heads) < UNREAD_PREVIEWS else self._unread_count(me["id"], now)
        out = {"session": me["id"], "unread": count, "messages": heads}
        if over:
            out["unread_more"] = True  # `unread` is the cap: more than that are unread
        if not heads:
            out["empty_because"] = self._why_empty(me, now)
        return out

    def sent(self, session: str, limit: int = 20) -> dict:
        """Messages this session sent: each recipient's label and delivery state (an expired one says
        so), and who acknowledged it."""
        me = self.session_row(session)
        now = self.clock()
        rows = self.conn.execute(
            "SELECT m.*, NULL AS label FROM messages m WHERE m.sender=? ORDER BY m.id DESC LIMIT ?",
            (me["id"], max(1, min(int(limit), 200))),
        ).fetchall()
        out = []
        for d, r in zip(self._msgs(rows), rows):
            expired = r["expires_at"] is not None and r["expires_at"] <= now
            d["deliveries"] = {
                x["recipient"]: ("expired" if expired and x["state"] in ("stored", "offered") else x["state"])
                for x in self.conn.execute("SELECT recipient, state FROM deliveries WHERE message_id=?", (r["id"],))
            }
            d["recipient_labels"] = {
                x[0]: x[1] for x in self.conn.execute(
                    "SELECT d.recipient, s.label FROM deliveries d LEFT JOIN sessions s ON s.id=d.recipient "
                    "WHERE d.message_id=? AND s.label IS NOT NULL", (r["id"],))
            }
            if r["ack_required"]:
                d["acked_by"] = [x[0] for x in self.conn.execute(
                    "SELECT session_id FROM acks WHERE message_id=? ORDER BY acked_at", (r["id"],))]
                d["not_acked"] = sorted(set(d["deliveries"]) - set(d["acked_by"]))
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
                except InvalidName as exc:
                    raise RoomError(str(exc)) from None
            if self._room_id(name, create=False) is None:
                raise RoomError(f"no room named {room!r}; your rooms: {', '.join(rooms) or 'none'}")
            if name not in rooms:  # a room's history is for its members
                raise RoomError(f"you are not in room {name!r}; your rooms: {', '.join(rooms) or 'none'} "
                                "(join it first to read its history)")
            targets = [name]
        ids = [self._room_id(t, create=False) for t in targets]
        q = (
            "SELECT DISTINCT m.*, s.label FROM message_rooms mr JOIN messages m ON m.id=mr.message_id "
            "LEFT JOIN sessions s ON s.id=m.sender WHERE mr.room_id IN ({}) AND m.kind='msg'".format(",".join("?" * len(ids)))
            # a direct message shows only to its sender and recipients
            + " AND (m.direct=0 OR m.sender=? OR EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id=m.id AND d.recipient=?))"
        )
        params: list[Any] = [*ids, me["id"], me["id"]]
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
