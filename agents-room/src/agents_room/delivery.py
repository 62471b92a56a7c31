"""Delivery: the pending check that offers unread mail (R-ROOM-8), its nudge, and the Stop guard
(R-ROOM-10).
"""

from __future__ import annotations

import os

from .sqlite_api import sqlite3
from .jsonload import loads
from .store import immediate
from .queries import CODEX_HOLD_CAP, CODEX_HOLD_WINDOW, HOLD, RETRY_WINDOW, STOP_GUARD_TTL, UNREAD_COUNT_CAP, RoomBase

#: a pending check offers at most the oldest this many; its nudge counts on to UNREAD_COUNT_CAP
OFFER_CAP = 100


class Offer:
    """Messages a pending check just offered, the rooms they came through, and the one-line nudge."""

    __slots__ = ("session", "messages", "rooms", "nudge")

    def __init__(self, session: str, messages: list[dict], rooms: list[str], nudge: str):
        self.session, self.messages, self.rooms, self.nudge = session, messages, rooms, nudge

    def __repr__(self) -> str:
        return f"Offer({self.session!r}, {len(self.messages)} messages, {self.nudge!r})"



#: the deliveries a pending check offers: never offered, offered longer ago than the retry window,
#: or offered "in the future" (a clock that stepped back); one clause for pending() and the waiter
_DUE = " AND (d.state='stored' OR d.offered_at IS NULL OR d.offered_at <= ? OR d.offered_at > ?)"


class Delivery(RoomBase):
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
            # the oldest OFFER_CAP due: a hook runs on every tool call, and a backlog of 100,000 cost
            # seconds a call when all of it was offered at once (issue 30); the rest comes next time
            rows = self.conn.execute(self._PENDING_SQL + _DUE + " ORDER BY d.message_id LIMIT ?",
                                     (sid, now, now - window, now, OFFER_CAP)).fetchall()
            if not rows:
                return None
            self.conn.executemany(
                "UPDATE deliveries SET state='offered', offered_at=?, offer_count=offer_count+1 "
                "WHERE message_id=? AND recipient=? AND state IN ('stored','offered')",
                [(now, r["id"], sid) for r in rows],
            )
            my_rooms = set(self._rooms_of(sid))
            msgs = self._msgs(rows, my_rooms)
            # the nudge counts every unread message, not only those due now: at Stop a message offered
            # minutes ago is not re-offered, but "1 unread" with 2 unread would mislead (issue 11)
            unread = msgs if window == 0 else self._msgs(self.conn.execute(
                self._PENDING_SQL + " ORDER BY d.message_id LIMIT ?", (sid, now, OFFER_CAP)).fetchall(), my_rooms)
            count, more = (len(unread), False) if len(unread) < OFFER_CAP else self._unread_count(sid, now)
            # (a Stop's unread list is the oldest OFFER_CAP too; the count above goes on to the cap)
            if more:  # urgent and high mail past the oldest OFFER_CAP is still named (R-ROOM-16)
                seen = {m["id"] for m in unread}
                unread = unread + [m for m in self._msgs(self.conn.execute(
                    self._IMPORTANT_SQL, (sid, now, UNREAD_COUNT_CAP)).fetchall(), my_rooms) if m["id"] not in seen]
        return Offer(sid, msgs, *self._nudge(sid, unread, my_rooms, count, more))

    _IMPORTANT_SQL = (
        # CROSS JOIN keeps the few important messages the outer loop (SQLite does not reorder it)
        "SELECT m.*, s.label, d.state AS dstate FROM messages m INDEXED BY messages_important "
        "CROSS JOIN deliveries d ON d.message_id=m.id AND d.recipient=? LEFT JOIN sessions s ON s.id=m.sender "
        "WHERE m.importance IN ('high','urgent') AND d.state IN ('stored','offered') "
        "AND (m.expires_at IS NULL OR m.expires_at > ?) ORDER BY m.id LIMIT ?"
    )

    def _nudge(self, sid: str, msgs: list[dict], my_rooms: set[str], count: int | None = None,
               more: bool = False) -> tuple[list[str], str]:
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
        n = len(msgs) if count is None else count
        who = ", ".join(senders[:2]) + (f" +{len(senders) - 2} more" if len(senders) > 2 else "")
        text = (
            f"agents-room: {'more than ' if more else ''}{n} unread message{'s' if n != 1 or more else ''} "
            f"for {sid} via {where} from {who}. "
            f'Read with msg_recv(session="{sid}").'
        )
        # urgent mail is named first, so it cannot drown in a count (R-ROOM-16)
        urgent = [m for m in msgs if m.get("importance") == "urgent"]
        high = [m for m in msgs if m.get("importance") == "high"]
        if urgent:
            m = urgent[0]
            preview = " ".join(m["body"].split())[:80]
            text = (f"agents-room: URGENT #{m['id']} from {m['from_label'] or m['from']}: {preview!r}"
                    + (f" (+{len(urgent) - 1} more urgent)" if len(urgent) > 1 else "") + ". " + text[len("agents-room: "):])
        elif high:
            text = text.replace(" unread message", f" unread ({len(high)} high) message", 1)
        asks = [m["id"] for m in msgs if m.get("ack_required")]
        if asks:
            text += f" {len(asks)} ask{'s' if len(asks) == 1 else ''} for an acknowledgement: msg_ack(session=\"{sid}\", message_ids={asks[:5]})."
        return via, text

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
            blocks = [t for t in loads(me["stop_blocks"] or "[]") if now - t < CODEX_HOLD_WINDOW]
            if harness == "codex":
                if turn_id and me["stop_block_turn"] == turn_id:
                    return None
                if len(blocks) >= CODEX_HOLD_CAP:
                    return None
            offer = self.pending(sid, "stop")
            if offer is None:
                return None
            blocks.append(now)
            import json  # only to hold a Stop; the json package stays off the hooks' usual path

            self.conn.execute(
                "UPDATE sessions SET stop_block_pending=1, stop_block_turn=?, stop_blocks=? WHERE id=?",
                (turn_id, json.dumps(blocks[-10:]), sid),
            )
            self._event("stop_hold", sid, messages=[m["id"] for m in offer.messages])
            self._ring(sid)  # its next Stop lets the turn end
        return offer

    def _stop_guard_current(self, me: sqlite3.Row, now: float, turn_id: str | None) -> bool:
        """Is the session's "Stop already held once" flag still about the current turn?

        Not when the harness names another turn, nor when the hold is older than
        :data:`STOP_GUARD_TTL`. A hold in the future (a clock that stepped back) still counts:
        never blocking twice matters more than one missed hold.
        """
        if turn_id and me["stop_block_turn"] and turn_id != me["stop_block_turn"]:
            return False
        blocks = loads(me["stop_blocks"] or "[]")
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


    # -------------------------------------------------------------- wake waiter
    def has_due(self, session: str, event: str = "stop") -> bool:
        """Would :meth:`pending` offer anything now? A read-only check for the wake waiter's poll."""
        now = self.clock()
        return self.conn.execute(
            self._PENDING_SQL + _DUE + " LIMIT 1", (session, now, now - RETRY_WINDOW[event], now)
        ).fetchone() is not None

    def wake_register(self, session: str) -> str:
        """Register this process as the session's idle waiter; a newer waiter or a tool event supersedes it."""
        token = os.urandom(6).hex()
        with immediate(self.conn):
            self.conn.execute("UPDATE sessions SET wake_waiter=? WHERE id=?", (token, session))
            self._ring(session)  # its next tool event stands the waiter down
        return token

    def wake_current(self, session: str, token: str) -> bool:
        """Is this waiter still the session's, and the session neither busy again nor ended?"""
        cur = self.conn.execute("SELECT wake_waiter, ended_at FROM sessions WHERE id=?", (session,)).fetchone()
        return cur is not None and cur["ended_at"] is None and cur["wake_waiter"] == token

    def wake_release(self, session: str, token: str) -> None:
        with immediate(self.conn):
            self.conn.execute("UPDATE sessions SET wake_waiter=NULL WHERE id=? AND wake_waiter=?", (session, token))
