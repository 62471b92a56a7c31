"""Leases on files and globs (R-ROOM-5): acquire, renew, release, expiry notices.
"""

from __future__ import annotations

import sqlite3

from . import liveness

from .naming import (
    input_rel_path,
    glob_matches,
    globs_overlap,
)
from .store import immediate
from .queries import check_ttl, DEFAULT_LEASE_TTL, MAX_LEASE_TTL, RoomBase, RoomError, _fmt_in, _fmt_ts


class Leases(RoomBase):
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
        ttl = check_ttl(ttl, "ttl", MAX_LEASE_TTL) or DEFAULT_LEASE_TTL
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
        ttl = check_ttl(ttl, "ttl", MAX_LEASE_TTL) or DEFAULT_LEASE_TTL
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

