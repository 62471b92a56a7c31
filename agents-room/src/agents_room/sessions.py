"""Sessions and presence: join (R-ROOM-3, R-ROOM-9, R-ROOM-18), leave, end, who (R-ROOM-4).
"""

from __future__ import annotations

import os

from .sqlite_api import sqlite3
from . import liveness

from .naming import (
    InvalidName,
    normalize_room,
    repo_of,
)
from .store import immediate
from .queries import AUTONOMY_NAMES, NOTIFY, RoomBase, RoomError, WAKE, _fmt_ts, parse_autonomy

TYPE_CHECKING = False  # typing is not imported at run time: the hook runs on every tool call
if TYPE_CHECKING:
    from typing import Any, Iterable


class Sessions(RoomBase):
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
        import json  # here, not at the top: json imports re and enum, which the hooks' path does without

        level = parse_autonomy(autonomy)
        try:
            wanted = [normalize_room(r) for r in (rooms or []) if r and r.strip()]
        except InvalidName as exc:
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
                    "AND (? IS NULL OR harness_key IS NULL OR harness_key=?) "
                    # one process hosting several agents (an SDK-driven orchestrator): a join from
                    # another repository or with another label is another agent (R-ROOM-18)
                    "AND (? IS NULL OR repo IS NULL OR repo=?) AND (? IS NULL OR label IS NULL OR label=?) "
                    "ORDER BY last_seen DESC LIMIT 1",
                    (ppid, pstart, harness, harness, harness_key, harness_key, repo, repo, label, label),
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
            pending, pending_more = self._unread_count(sid, now)
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
            **({"unread_more": True} if pending_more else {}),
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
                        except InvalidName:
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

    def session_for_chat(self, harness_key: str, harness: str) -> sqlite3.Row | None:
        """The newest session of one harness chat (its own key), ended or not."""
        return self.conn.execute(
            "SELECT * FROM sessions WHERE harness_key=? AND harness=? ORDER BY last_seen DESC LIMIT 1", (harness_key, harness)
        ).fetchone()

    # --------------------------------------------------------------------- who
    #: ids per statement (SQLite allows 32766 parameters since 3.32; older builds 999)
    _IDS_PER_QUERY = 500

    def _leases_and_rooms(self, ids: list[str], now: float) -> tuple[dict[str, list], dict[str, list[str]]]:
        """Each session's live leases and its rooms (by name): two statements for all of `ids`, not
        two per session (`who` answers every run's start, and a room may hold a team's agents)."""
        leases: dict[str, list] = {}
        rooms: dict[str, list[str]] = {}
        for i in range(0, len(ids), self._IDS_PER_QUERY):
            chunk = ids[i:i + self._IDS_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            for x in self.conn.execute(
                f"SELECT session_id, pattern, mode, repo, expires_at FROM leases "
                f"WHERE session_id IN ({marks}) AND expires_at>? ORDER BY session_id, rowid", (*chunk, now)
            ):
                leases.setdefault(x["session_id"], []).append(
                    {"pattern": x["pattern"], "mode": x["mode"], "repo": x["repo"], "expires_at": x["expires_at"]})
            for x in self.conn.execute(
                f"SELECT m.session_id, r.name FROM memberships m JOIN rooms r ON r.id=m.room_id "
                f"WHERE m.session_id IN ({marks}) ORDER BY r.name", chunk
            ):
                rooms.setdefault(x[0], []).append(x[1])
        return leases, rooms

    def who(self, session: str | None = None, room: str | None = None, include_ended: bool = False) -> dict:
        import json

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
                except InvalidName:
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
        rows = self.conn.execute(sql, params).fetchall()
        leases_of, rooms_of = self._leases_and_rooms([r["id"] for r in rows], now)
        for r in rows:
            leases = leases_of.get(r["id"], [])
            out.append(
                {
                    "session": r["id"],
                    "label": r["label"],
                    "harness": r["harness"],
                    "repo": r["repo"],
                    "cwd": r["cwd"],
                    "rooms": rooms_of.get(r["id"], []),
                    "state": self.session_state(r),
                    "pid": r["pid"],
                    "autonomy": AUTONOMY_NAMES.get(r["autonomy"], str(r["autonomy"])),
                    "tags": json.loads(r["tags"] or "[]"),
                    "last_seen": _fmt_ts(r["last_seen"]),
                    "leases": [x | {"expires_at": _fmt_ts(x["expires_at"])} for x in leases],
                }
            )
        return {"sessions": out}

