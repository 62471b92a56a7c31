"""Leases on files and globs (R-ROOM-5): acquire, renew, release, expiry notices.
"""

from __future__ import annotations

import os

from .sqlite_api import sqlite3
from . import liveness

from .naming import (
    input_rel_path,
    glob_matches,
    globs_overlap,
)
from .bells import LEASES
from .store import immediate
from .queries import check_ttl, DEFAULT_LEASE_TTL, MAX_LEASE_TTL, RoomBase, RoomError, _fmt_in, _fmt_ts


def lease_pattern(path: str, me) -> str:
    """A lease pattern in stored form, refused unless it resolves inside the session's repository
    (R-ROOM-18): "", "/", "../..", "/etc/passwd" or a NUL would protect nothing and block nobody."""
    raw = path if isinstance(path, str) else ""
    if not raw.strip():
        raise RoomError("empty lease pattern: name a path or glob inside your repository, e.g. src/api/** (or ** for all of it)")
    if "\x00" in raw:
        raise RoomError(f"lease pattern {raw!r} contains a NUL character")
    if not me["repo_root"]:
        raise RoomError(
            f"session {me['id']} is not in a git repository ({me['cwd'] or 'no cwd'}), so a lease would protect nothing; "
            "join from inside a repository (room_join with cwd=...)")
    pat = input_rel_path(raw, me["repo_root"], me["cwd"])
    if os.path.isabs(pat) or pat in (".", "..") or pat.startswith("../") or "/../" in f"/{pat}/":
        raise RoomError(
            f"lease pattern {raw!r} resolves outside your repository {me['repo_root']}: lease a path or glob inside it, "
            "e.g. src/api/** (or ** for all of it)")
    return pat


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
            pats = [lease_pattern(p, me) for p in paths]
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
                mine = self.conn.execute("SELECT id FROM leases WHERE session_id=? AND repo=? AND pattern=?",
                                         (sid, repo, p)).fetchone()
                if mine:
                    self.conn.execute("UPDATE leases SET mode=?, acquired_at=?, expires_at=?, notified=0 WHERE id=?",
                                      (mode, now, now + ttl, mine[0]))
                    lid = mine[0]
                else:
                    lid = self.conn.execute(
                        "INSERT INTO leases(session_id, repo, pattern, mode, acquired_at, expires_at) VALUES (?,?,?,?,?,?)",
                        (sid, repo, p, mode, now, now + ttl),
                    ).lastrowid
                granted.append({"lease_id": lid, "pattern": p, "mode": mode, "repo": repo or None, "expires_at": _fmt_ts(now + ttl)})
            self._touch(sid)
            self._event("lease_acquire", sid, paths=pats, mode=mode)
            self._ring_all((sid, LEASES))  # its hooks tell it of the expiry; every PreToolUse warns of it
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
            if renewed:
                self._ring_all((me["id"], LEASES))
        out: dict = {"renewed": renewed}
        if lost:
            out["not_held"] = lost
        if not rows and not paths:
            # nothing to renew: say whether a lease was lost, so an empty answer is never read as success
            taken = self.conn.execute(
                "SELECT e.session_id, e.at, e.data FROM events e WHERE e.kind='lease_takeover' AND e.data LIKE ? "
                "ORDER BY e.id DESC LIMIT 5", (f'%"holder": "{me["id"]}"%',),
            ).fetchall()
            if taken:
                import json as _json

                out["lost"] = [{"taken_by": r["session_id"], "at": _fmt_ts(r["at"]),
                                "reason": _json.loads(r["data"]).get("reason")} for r in taken]
                out["message"] = (f"you hold no leases: your lease was taken over by {taken[0]['session_id']} at "
                                  f"{_fmt_ts(taken[0]['at'])}; acquire it again with lease_acquire")
            else:
                out["message"] = "you hold no leases, so nothing was renewed"
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


    # ------------------------------------------------------------- for people
    def lease_list(self, repo: str | None = None, include_expired: bool = False) -> dict:
        """Every lease (live ones unless asked), with its holder's label, state and expiry."""
        now = self.clock()
        q = ("SELECT l.*, s.label, s.pid, s.pid_start, s.env_marker, s.ended_at FROM leases l "
             "JOIN sessions s ON s.id=l.session_id WHERE 1=1")
        params: list = []
        if repo:
            q += " AND l.repo=?"
            params.append(repo if repo.startswith("repo:") else "repo:" + repo)
        if not include_expired:
            q += " AND l.expires_at > ?"
            params.append(now)
        rows = self.conn.execute(q + " ORDER BY l.repo, l.pattern", params).fetchall()
        return {"leases": [self._holder_desc(r, now) | {"lease_id": r["id"], "holder_state": self.session_state(r)}
                           for r in rows]}

    def lease_force_release(self, lease_ids: list[int], by: str = "a person") -> dict:
        """Clear stuck leases by id (a person's override, `lease release --force`); each holder is told."""
        released = []
        with immediate(self.conn):
            for lid in lease_ids:
                row = self.conn.execute("SELECT * FROM leases WHERE id=?", (int(lid),)).fetchone()
                if row is None:
                    raise RoomError(f"no lease with id {lid} (see `agents-room lease list`)")
                self.conn.execute("DELETE FROM leases WHERE id=?", (row["id"],))
                self.notice(row["session_id"], f"your {row['mode']} lease on {row['pattern']} in {row['repo'] or 'no repo'} "
                                               f"was released by {by} (lease release --force).")
                self._event("lease_force_release", None, lease=row["id"], holder=row["session_id"], by=by)
                released.append({"lease_id": row["id"], "pattern": row["pattern"], "holder": row["session_id"]})
        return {"released": released}
