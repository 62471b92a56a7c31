"""Threads and acknowledgements (R-ROOM-16).

A reply (``msg_send(reply_to=…)``) joins its parent's thread (the thread id is the id of the
thread's first message) and reaches every participant of the thread: everyone who sent a message in
it or was addressed by one. ``ack_required`` asks each recipient to confirm with ``msg_ack``; the
sender sees who did (``msg_sent``).
"""

from __future__ import annotations


from .sqlite_api import sqlite3
from .queries import RoomBase, RoomError
from .store import immediate

#: a message this session may see: it sent it, it was addressed to it, or it went through one of
#: its rooms and was not a direct message to others
VISIBLE_SQL = (
    "(m.sender=:me OR EXISTS (SELECT 1 FROM deliveries dv WHERE dv.message_id=m.id AND dv.recipient=:me) "
    "OR (m.direct=0 AND m.kind='msg' AND EXISTS (SELECT 1 FROM message_rooms mv JOIN memberships ms "
    "ON ms.room_id=mv.room_id WHERE mv.message_id=m.id AND ms.session_id=:me)))"
)


class Threads(RoomBase):
    def _visible_message(self, me: sqlite3.Row, message_id: int) -> sqlite3.Row:
        try:
            mid = int(message_id)
        except (TypeError, ValueError):
            raise RoomError(f"message id must be a number, not {message_id!r}") from None
        row = self.conn.execute(
            f"SELECT m.* FROM messages m WHERE m.id=:id AND {VISIBLE_SQL}", {"id": mid, "me": me["id"]}
        ).fetchone()
        if row is None:
            raise RoomError(f"no message #{mid} that you can see (see msg_recv, room_history or msg_search for ids)")
        return row

    def thread_participants(self, thread_id: int) -> set[str]:
        """Everyone who sent a message in the thread or was addressed by one (live or ended)."""
        rows = self.conn.execute(
            "SELECT sender FROM messages WHERE thread_id=? AND kind='msg' UNION "
            "SELECT d.recipient FROM deliveries d JOIN messages m ON m.id=d.message_id WHERE m.thread_id=?",
            (thread_id, thread_id),
        ).fetchall()
        known = {r[0] for r in rows}
        live = {r[0] for r in self.conn.execute(
            f"SELECT id FROM sessions WHERE id IN ({','.join('?' * len(known))})", sorted(known))} if known else set()
        return live

    def thread(self, session: str, message_id: int, limit: int = 200) -> dict:
        """The whole thread of a message, oldest first, as far as this session may see it."""
        me = self.session_row(session)
        try:
            mid = int(message_id)
        except (TypeError, ValueError):
            raise RoomError(f"message id must be a number, not {message_id!r}") from None
        found = self.conn.execute("SELECT id, thread_id FROM messages WHERE id=?", (mid,)).fetchone()
        tid = (found["thread_id"] or found["id"]) if found else None
        rows = self.conn.execute(
            f"SELECT m.*, s.label FROM messages m LEFT JOIN sessions s ON s.id=m.sender "
            f"WHERE m.thread_id=:t AND {VISIBLE_SQL} ORDER BY m.id LIMIT :n",
            {"t": tid, "me": me["id"], "n": max(1, min(int(limit), 500))},
        ).fetchall()
        if not rows:  # a thread none of whose messages you may see is not yours to read
            raise RoomError(f"no message #{mid} that you can see (see msg_recv, room_history or msg_search for ids)")
        return {"thread": tid, "messages": self._msgs(rows, set(self._rooms_of(me["id"]))),
                "participants": sorted(self.thread_participants(tid))}

    def ack(self, session: str, message_ids: list[int] | int) -> dict:
        """Acknowledge messages addressed to this session (it reads them too)."""
        ids = [message_ids] if isinstance(message_ids, (int, str)) else list(message_ids or [])
        if not ids:
            raise RoomError("no message ids given: pass the ids msg_recv returned")
        now = self.clock()
        acked, refused = [], []
        with immediate(self.conn):
            me = self.session_row(session)
            for raw in ids:
                try:
                    mid = int(raw)
                except (TypeError, ValueError):
                    refused.append({"id": raw, "reason": "not a message id"})
                    continue
                got = self.conn.execute(
                    "SELECT state FROM deliveries WHERE message_id=? AND recipient=?", (mid, me["id"])
                ).fetchone()
                if got is None:
                    refused.append({"id": mid, "reason": "not addressed to you"})
                    continue
                self.conn.execute(
                    "INSERT OR IGNORE INTO acks(message_id, session_id, acked_at) VALUES (?,?,?)", (mid, me["id"], now)
                )
                self.conn.execute(
                    "UPDATE deliveries SET state='read', read_at=coalesce(read_at, ?) WHERE message_id=? AND recipient=? "
                    "AND state IN ('stored','offered')", (now, mid, me["id"]),
                )
                acked.append(mid)
            self._event("ack", me["id"], messages=acked)
            self._touch(me["id"])
        out: dict = {"acked": acked}
        if refused:
            out["refused"] = refused
        return out
