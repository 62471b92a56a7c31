"""Full-text search over the messages a session may see (R-ROOM-16), with SQLite FTS5.

Every word of the query must occur (in any order); a quoted phrase must occur as written; a word
ending in ``*`` matches as a prefix. The query is never passed to FTS5 as syntax, so no input is a
syntax error. Results: newest first (a conversation's latest word on a subject is the one that
counts), streamed from the index so the scan stops at the limit.
"""

from __future__ import annotations

from .queries import RoomBase, RoomError
from .threads import VISIBLE_SQL

_TOKEN = r'"([^"]+)"|(\S+)'
_WORD = r"\w+"  # re.UNICODE


def fts_query(text: str) -> str:
    """A user's words as an FTS5 query of quoted terms (AND); ``foo*`` stays a prefix query."""
    import re  # here, not at the top: the Room the hooks open imports this module, and they need no re

    terms = []
    for phrase, word in re.findall(_TOKEN, text or ""):
        if phrase:
            words = re.findall(_WORD, phrase, re.UNICODE)
            if words:
                terms.append('"' + " ".join(words) + '"')
            continue
        prefix = word.endswith("*")
        for w in re.findall(_WORD, word, re.UNICODE):
            terms.append(f'"{w}"')
        if prefix and terms and re.findall(_WORD, word, re.UNICODE):
            terms[-1] += "*"
    return " ".join(terms)


class Search(RoomBase):
    def search(self, session: str, query: str, limit: int = 20, room: str | None = None) -> dict:
        me = self.session_row(session)
        q = fts_query(query)
        if not q:
            raise RoomError("empty search: give one or more words (a \"quoted phrase\" or a prefix* works too)")
        params: dict = {"q": q, "me": me["id"], "n": max(1, min(int(limit), 200))}
        extra = ""
        if room is not None:
            rid = self._room_id(room, create=False) or self._room_id(self._normalized(room), create=False)
            if rid is None or room not in self._rooms_of(me["id"]) and self._normalized(room) not in self._rooms_of(me["id"]):
                raise RoomError(f"you are not in room {room!r}; your rooms: {', '.join(self._rooms_of(me['id'])) or 'none'}")
            extra = " AND EXISTS (SELECT 1 FROM message_rooms mr WHERE mr.message_id=m.id AND mr.room_id=:rid)"
            params["rid"] = rid
        # newest first, streamed from the full-text index: the scan stops at the limit, so a common word
        # or a short prefix matching thousands of messages costs no more than a rare one
        rows = self.conn.execute(
            "SELECT m.*, s.label FROM messages_fts JOIN messages m ON m.id=messages_fts.rowid "
            f"LEFT JOIN sessions s ON s.id=m.sender WHERE messages_fts MATCH :q AND {VISIBLE_SQL}{extra} "
            "ORDER BY messages_fts.rowid DESC LIMIT :n",
            params,
        ).fetchall()
        return {"query": query, "matches": len(rows), "messages": self._msgs(rows, set(self._rooms_of(me["id"])))}

    def _normalized(self, room: str) -> str:
        from .naming import InvalidName, normalize_room

        try:
            return normalize_room(room)
        except InvalidName as exc:
            raise RoomError(str(exc)) from None
