"""Doctor and prune (R-ROOM-13): integrity, split rooms, duplicate chats, stale deliveries,
sessions below wake; expired messages, long-gone sessions and old events.
"""

from __future__ import annotations




from .naming import (
    legacy_key,
)
from .store import SCHEMA_VERSION, immediate, schema_version
from .queries import HEADLESS_TAG, MAX_MESSAGE_TTL, AUTONOMY_NAMES, AUTO_PRUNE_EVERY, EVENTS_PRUNE_AFTER, GONE_PRUNE_AFTER, RoomBase, STALE_OFFER_AFTER, WAKE, _fmt_ts


class Maintenance(RoomBase):
    # ----------------------------------------------------------------- doctor
    def doctor(self, fix: bool = False) -> dict:
        import json  # here, not at the top: json imports re and enum, which the hooks' path does without

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
                members = [r[0] for r in self.conn.execute(
                    "SELECT m.session_id FROM memberships m JOIN rooms r ON r.id=m.room_id JOIN sessions s ON s.id=m.session_id "
                    "WHERE r.name=? AND s.ended_at IS NULL", (legacy,))]
                if not members:
                    # nobody left in the old name: only its history remains there
                    legacy_only.append({"room": canon, "old_name": legacy})
                    continue
                splits.append({
                    "room": canon, "split_from": legacy, "sessions": members,
                    "fix": [[f"agents-room leave --session {s} --room {legacy}", f"agents-room join --session {s} --room {canon}"]
                            for s in members],
                    "note": "not fixed automatically: moving a session between rooms is the session's decision",
                })
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
        # a row with another key is another chat of that process (e.g. after /clear), as join treats it.
        # Not headless runs without a chat key: run-config anchored them to the platform's pid, one for all its runs
        dups += self.conn.execute(
            "SELECT harness, pid AS harness_key, group_concat(id) AS ids FROM sessions WHERE ended_at IS NULL AND pid IS NOT NULL "
            "AND pid_start IS NOT NULL AND NOT (harness_key IS NULL AND tags LIKE '%\"headless\"%') "
            "GROUP BY harness, pid, pid_start, coalesce(harness_key, '') HAVING count(*) > 1"
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
                    self._ring(keep)  # the unread mail moved to it
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
        # expiries beyond the ttl bound (written before it was enforced: `--ttl 1e308`, inf)
        far = self.conn.execute(
            "SELECT count(*) FROM messages WHERE expires_at IS NOT NULL AND expires_at > ?", (now + MAX_MESSAGE_TTL,)
        ).fetchone()[0]
        report["expiry_beyond_limit"] = far
        if far and fix:
            with immediate(self.conn):
                self.conn.execute(
                    "UPDATE messages SET expires_at=? WHERE expires_at IS NOT NULL AND expires_at > ?",
                    (now + MAX_MESSAGE_TTL, now + MAX_MESSAGE_TTL),
                )
            report["fixed"].append(f"capped the expiry of {far} message(s) at 30 days from now")
        elif far:
            report["problems"].append(
                f"{far} message(s) expire more than 30 days ahead (written by an older agents-room): doctor --fix caps them"
            )
        # live sessions below wake
        below = []
        for r in self.conn.execute("SELECT * FROM sessions WHERE ended_at IS NULL AND autonomy < ?", (WAKE,)).fetchall():
            # a headless platform run is below wake by design: nobody is there to wake (issue 9)
            if self.session_state(r) == "live" and HEADLESS_TAG not in json.loads(r["tags"] or "[]"):
                below.append({"session": r["id"], "label": r["label"], "harness": r["harness"],
                              "autonomy": AUTONOMY_NAMES.get(r["autonomy"]),
                              "fix": f"agents-room join --session {r['id']} --autonomy wake"})
        report["below_wake"] = below
        if below:
            report["problems"].append(
                f"{len(below)} live session(s) below wake: a message cannot start a turn in them while idle"
            )
        report["ok"] = not report["problems"]  # "ok" and the exit code never disagree
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
        if not dry_run:
            from .bells import prune_bells

            prune_bells(self)
        return {"dry_run": dry_run, "expired_messages": expired, "gone_sessions": gone, "old_events": events}
