"""Property-based tests of the delivery state machine (R-ROOM-8) and addressing (R-ROOM-7).

Over random sequences of sends, tool and Stop checks, reads, clock jumps
(forwards and backwards), leaves, ends and rejoins: no unread, unexpired
delivery ever becomes unreachable by the pending check, and msg_recv returns
exactly the unread set.
"""

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from agents_room.room import RETRY_WINDOW, Room

NAMES = ["a", "b", "c"]


class Clock:
    def __init__(self):
        self.t = 1_800_000_000.0

    def __call__(self):
        return self.t


class Deliveries(RuleBasedStateMachine):
    @initialize()
    def setup(self):
        self.dir = tempfile.TemporaryDirectory()
        self.clock = Clock()
        self.room = Room.open(Path(self.dir.name) / "p.db", clock=self.clock)
        self.ids = {}
        for n in NAMES:
            self.ids[n] = self.room.join(cwd=self.dir.name, rooms=["p"], label=n, repo_room=False)["session"]
        self.model = {}  # (message id, recipient) -> expires_at or None; present while unread

    def teardown(self):
        if hasattr(self, "room"):
            self.room.close()
            self.dir.cleanup()

    def _unread(self, who):
        now = self.clock()
        return {m for (m, r), exp in self.model.items() if r == self.ids[who] and (exp is None or exp > now)}

    @rule(sender=st.sampled_from(NAMES), to=st.sampled_from(["*", "a", "b", "c", "tag:none"]),
          ttl=st.one_of(st.none(), st.integers(1, 4000)))
    def send(self, sender, to, ttl):
        sel = self.ids[to] if to in NAMES else to
        if sel == self.ids[sender]:
            sel = "*"
        res = self.room.send(self.ids[sender], sel, "m", ttl=ttl)
        # recipients from the model, not from the answer under test (R-ROOM-7): every session is in
        # room "p" between rules, so '*' reaches the two others, a name that one, tag:none nobody
        if sel == "*":
            expected = {self.ids[n] for n in NAMES if n != sender}
        elif sel == "tag:none":
            expected = set()
        else:
            expected = {sel}
        assert set(res["recipient_ids"]) == expected and res["recipients"] == len(expected)
        for r in expected:
            self.model[(res["message_id"], r)] = self.clock() + ttl if ttl else None

    @rule(who=st.sampled_from(NAMES), event=st.sampled_from(["tool", "stop"]))
    def check(self, who, event):
        offer = self.room.pending(self.ids[who], event)
        got = {m["id"] for m in offer.messages if m["from"] != "agents-room"} if offer else set()
        assert got <= self._unread(who)

    @rule(who=st.sampled_from(NAMES), limit=st.integers(1, 5))
    def recv(self, who, limit):
        res = self.room.recv(self.ids[who], limit=limit)
        for m in res["messages"]:
            assert m["id"] in self._unread(who)
            self.model.pop((m["id"], self.ids[who]), None)
        if not res["messages"]:
            assert not self._unread(who) and res["empty_because"]

    @rule(seconds=st.sampled_from([-120, -1, 1, 30, 600, 1799, 1801, 3600]))
    def tick(self, seconds):
        self.clock.t += seconds

    @rule(who=st.sampled_from(NAMES))
    def leave_and_rejoin_room(self, who):
        self.room.leave(self.ids[who], ["p"])
        self.room.join(session=self.ids[who], rooms=["p"], cwd=self.dir.name, repo_room=False)

    @rule(who=st.sampled_from(NAMES))
    def end_and_resume(self, who):
        self.room.end(self.ids[who])
        self.room.join(session=self.ids[who], cwd=self.dir.name, repo_room=False)

    @rule()
    def doctor_fix(self):
        self.room.doctor(fix=True)
        # doctor --fix marks every delivery past its expiry as expired for good: a later step back
        # of the clock does not make it unread again
        now = self.clock()
        self.model = {k: exp for k, exp in self.model.items() if exp is None or exp > now}

    def _probe(self, who, event, shift=0.0):
        """Run a pending check and roll it back: what would it offer?"""
        conn = self.room.conn
        saved = self.clock.t
        self.clock.t += shift
        conn.execute("BEGIN IMMEDIATE")
        try:
            offer = self.room.pending(self.ids[who], event)
        finally:
            conn.execute("ROLLBACK")
            self.clock.t = saved
        return {m["id"] for m in offer.messages if m["from"] != "agents-room"} if offer else set()

    @invariant()
    def no_delivery_is_unreachable(self):
        if not hasattr(self, "room"):
            return
        for who in NAMES:
            unread = self._unread(who)
            # tool events: retry window 0, so every unread delivery is offered now
            assert self._probe(who, "tool") == unread
            # Stop: everything unread is offered again once the window has passed since its last offer
            last = self.room.conn.execute(
                "SELECT max(offered_at) FROM deliveries WHERE recipient=?", (self.ids[who],)
            ).fetchone()[0] or self.clock()
            shift = RETRY_WINDOW["stop"] + 1 + max(0.0, last - self.clock())
            assert self._probe(who, "stop", shift) == self._unread_at(who, self.clock() + shift)

    def _unread_at(self, who, t):
        return {m for (m, r), exp in self.model.items() if r == self.ids[who] and (exp is None or exp > t)}

    @invariant()
    def states_are_valid(self):
        if not hasattr(self, "room"):
            return
        states = {r[0] for r in self.room.conn.execute("SELECT DISTINCT state FROM deliveries")}
        assert states <= {"stored", "offered", "read", "expired"}


Deliveries.TestCase.settings = settings(
    max_examples=40, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestDeliveries = Deliveries.TestCase
