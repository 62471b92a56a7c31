"""Divergence (R-ROOM-6): the hash each session last read per path, and who changed it since.
"""

from __future__ import annotations



from .naming import (
    abs_path,
    stored_abs_path,
    rel_path,
)
from .store import immediate
from .queries import RoomBase, RoomError, _fmt_ts, file_hash


class Divergence(RoomBase):
    # -------------------------------------------------------------- divergence
    def file_read(self, session: str, path: str, content_hash: str | None = None) -> dict:
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
            from .bells import READ_SUFFIX

            self._ring(me["id"] + READ_SUFFIX)  # its PreToolUse may now find the file changed since
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

