"""The autopilot scheduler's tick against a clock the test moves (issue 27 §5): across both DST
changes of Europe/Berlin in 2026 each due time fires exactly once — nothing skipped, nothing
doubled — and due times that passed while no server ran fire once, for the latest. Two schedulers on
one database (as two replicas would be) never fire a slot twice. On SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from sqlalchemy import select

from predictorx.server.autopilot_scheduler import Scheduler
from predictorx.server.hub import Hub
from predictorx.server.run import bootstrap
from predictorx.server.state import AppState
from predictorx.service import autopilot_cron, autopilots
from predictorx.store.autopilot_schema import AutopilotFiring
from predictorx.store.schema import Issue, Member

UTC = timezone.utc
BERLIN = ZoneInfo("Europe/Berlin")


class SteppedClock:
    poll = None

    def __init__(self, start: datetime):
        self.at = start

    def now(self) -> datetime:
        return self.at


def _world(db, clock, **crons: str) -> tuple[AppState, dict[str, str]]:
    bootstrap(db, "http://testserver")
    state = AppState(db, Hub())
    ids = {}
    with state.write() as s:
        member = s.scalars(select(Member)).first()
        for name, expression in crons.items():
            row, _ = autopilots.create(s, member.workspace_id, member.user_id,
                                       {"name": name, "title": "{{autopilot}} due {{due}}", "cron": expression,
                                        "timezone": "Europe/Berlin"}, now=clock.now())
            ids[name] = row.id
    return state, ids


def _run(scheduler: Scheduler, clock: SteppedClock, until: datetime, step: timedelta) -> None:
    while clock.at < until:
        clock.at = min(clock.at + step, until)
        scheduler.tick()


def _fired(state: AppState, autopilot_id: str) -> list[str]:
    """The local wall times (with their UTC offset) of the due times fired, in order."""
    with state.read() as s:
        rows = s.scalars(select(AutopilotFiring).where(AutopilotFiring.autopilot_id == autopilot_id)
                         .order_by(AutopilotFiring.due_at))
        return [r.due_at.astimezone(BERLIN).strftime("%d %H:%M%z") for r in rows]


def test_spring_forward_fires_every_due_time_once_and_the_skipped_wall_time_once(db):
    clock = SteppedClock(datetime(2026, 3, 28, 23, 0, tzinfo=UTC))  # 00:00 CET on the 29th
    state, ids = _world(db, clock, hourly="0 * * * *", nightly="30 2 * * *", quarter="*/15 * * * *")
    _run(Scheduler(state, clock), clock, datetime(2026, 3, 29, 3, 0, tzinfo=UTC), timedelta(minutes=1))
    # 02:00–02:59 does not exist on the 29th: 02:00 reads as 03:00 CEST (the instant it would have
    # been), which is also 03:00's own due time — once; 02:30 fires at 03:30 CEST.
    assert _fired(state, ids["hourly"]) == ["29 01:00+0100", "29 03:00+0200", "29 04:00+0200", "29 05:00+0200"]
    assert _fired(state, ids["nightly"]) == ["29 03:30+0200"]
    quarter = _fired(state, ids["quarter"])
    assert len(quarter) == len(set(quarter)) == 4 * 4  # four real hours: every 15 minutes, none lost
    assert _gaps(state, ids["quarter"]) == {timedelta(minutes=15)}
    assert quarter[:8] == ["29 00:15+0100", "29 00:30+0100", "29 00:45+0100", "29 01:00+0100",
                           "29 01:15+0100", "29 01:30+0100", "29 01:45+0100", "29 03:00+0200"]
    with state.read() as s:
        issues = s.scalars(select(Issue.title).order_by(Issue.number)).all()
    assert "nightly due 2026-03-29T03:30+02:00" in issues
    assert len(issues) == 4 + 1 + 16


def _gaps(state: AppState, autopilot_id: str) -> set[timedelta]:
    with state.read() as s:
        due = s.scalars(select(AutopilotFiring.due_at).where(AutopilotFiring.autopilot_id == autopilot_id)
                        .order_by(AutopilotFiring.due_at)).all()
    return {b - a for a, b in zip(due, due[1:])}


def test_fall_back_fires_the_repeated_wall_times_once(db):
    clock = SteppedClock(datetime(2026, 10, 24, 22, 0, tzinfo=UTC))  # 00:00 CEST on the 25th
    state, ids = _world(db, clock, hourly="0 * * * *", nightly="30 2 * * *")
    # Steps of 7 minutes: the scheduler sees each due time late, as a loaded server would.
    _run(Scheduler(state, clock), clock, datetime(2026, 10, 25, 4, 0, tzinfo=UTC), timedelta(minutes=7))
    # 02:00–02:59 happens twice (CEST, then CET): each wall time fires the first time only.
    assert _fired(state, ids["hourly"]) == ["25 01:00+0200", "25 02:00+0200", "25 03:00+0100", "25 04:00+0100",
                                            "25 05:00+0100"]
    assert _fired(state, ids["nightly"]) == ["25 02:30+0200"]


def test_due_times_missed_while_no_server_ran_fire_once_for_the_latest(db):
    clock = SteppedClock(datetime(2026, 6, 1, 8, 0, 30, tzinfo=UTC))
    state, ids = _world(db, clock, minutely="* * * * *")
    clock.at = datetime(2026, 6, 1, 8, 45, 10, tzinfo=UTC)  # the server was down for 44 due times
    scheduler = Scheduler(state, clock)
    wait = scheduler.tick()
    assert _fired(state, ids["minutely"]) == ["01 10:45+0200"]
    assert 49 <= wait <= 50  # it sleeps until the next due time, 08:46:00
    with state.read() as s:
        detail = s.scalar(select(AutopilotFiring.detail))
    assert "passed while no server ran" in detail and "2026-06-01T08:01:00" in detail
    scheduler.tick()
    assert len(_fired(state, ids["minutely"])) == 1  # the same clock time: nothing more


def test_two_schedulers_on_one_database_fire_each_slot_once(db):
    clock = SteppedClock(datetime(2026, 6, 1, 8, 0, 0, tzinfo=UTC))
    state, ids = _world(db, clock, **{f"a{i}": "* * * * *" for i in range(3)})
    other = AppState(db, Hub())  # a second replica's own state over the same database
    replicas = [Scheduler(state, clock), Scheduler(other, clock)]
    for _ in range(10):  # 10 minutes, both replicas ticking at once on every due minute
        clock.at += timedelta(minutes=1)
        threads = [threading.Thread(target=r.tick) for r in replicas]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    for autopilot_id in ids.values():
        fired = _fired(state, autopilot_id)
        assert len(fired) == len(set(fired)) == 10
    assert sum(r.fired for r in replicas) == 30


def test_cron_and_time_zone_are_checked():
    import pytest

    from predictorx.service.errors import Invalid

    for bad in ("* * * *", "61 * * * *", "* * * * * *", "every minute"):
        with pytest.raises(Invalid):
            autopilot_cron.check(bad, "UTC")
    for bad_zone in ("Mars/Olympus", "America", "../etc/passwd", ""):
        with pytest.raises(Invalid):
            autopilot_cron.check("* * * * *", bad_zone)
    with pytest.raises(Invalid, match="never due"):
        autopilot_cron.check("0 0 31 2 *", "UTC")
    assert autopilot_cron.check(" 0  9 * * 1-5 ", "Europe/Berlin") == "0 9 * * 1-5"


def test_autopilots_due_together_fire_in_a_few_statements_each(db):
    """30 due at the same second: a handful of statements for the batch and ~5 per issue (the issue,
    its classification, the firing's record) — one by one it was ~13 each (select, claim, re-read,
    savepoint, counter, counter read, issue, classification, runs, record, release…), which on a
    loaded PostgreSQL made the last of them ~3 s late. Numbers stay consecutive, each slot once."""
    from sqlalchemy import event

    from predictorx.service import classification

    classification.register()  # (as the app does: each issue is classified, as in production)
    clock = SteppedClock(datetime(2026, 6, 1, 8, 0, 30, tzinfo=UTC))
    state, ids = _world(db, clock, **{f"d{i:02d}": "* * * * *" for i in range(30)})
    scheduler = Scheduler(state, clock)
    statements: list[str] = []

    def count(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    event.listen(db.engine, "before_cursor_execute", count)
    try:
        clock.at = datetime(2026, 6, 1, 8, 1, 0, tzinfo=UTC)
        scheduler.tick()
    finally:
        event.remove(db.engine, "before_cursor_execute", count)
    assert scheduler.fired == 30
    assert len(statements) <= 30 * 6 + 12, len(statements)
    with state.read() as s:
        numbers = sorted(s.scalars(select(Issue.number)).all())
        firings = s.scalars(select(AutopilotFiring)).all()
    assert numbers == list(range(numbers[0], numbers[0] + 30))
    assert sorted(f.issue_number for f in firings) == numbers
    assert {f.outcome for f in firings} == {"created"} and all(f.detail.startswith("issue #") for f in firings)


def test_a_refused_firing_in_a_batch_fails_alone_and_the_others_fire(db):
    """The batch goes through whole or not at all: one autopilot whose agent is gone makes it fall
    back to firing one by one, where that one fails (recorded, counted) and the others file their
    issues — no gap in the issue numbers, nothing fired twice."""
    clock = SteppedClock(datetime(2026, 6, 1, 8, 0, 30, tzinfo=UTC))
    state, ids = _world(db, clock, **{f"b{i}": "* * * * *" for i in range(4)})
    with state.write() as s:
        from predictorx.store.autopilot_schema import Autopilot

        s.get(Autopilot, ids["b2"]).assignee = "gone-agent"
    scheduler = Scheduler(state, clock)
    clock.at = datetime(2026, 6, 1, 8, 1, 0, tzinfo=UTC)
    scheduler.tick()
    with state.read() as s:
        by_autopilot = {f.autopilot_id: f for f in s.scalars(select(AutopilotFiring))}
        numbers = sorted(s.scalars(select(Issue.number)).all())
        failures = s.get(Autopilot, ids["b2"]).failures
    assert len(by_autopilot) == 4
    assert by_autopilot[ids["b2"]].outcome == "failed" and "gone-agent" in by_autopilot[ids["b2"]].detail
    assert by_autopilot[ids["b2"]].issue_id is None and failures == 1
    assert {by_autopilot[ids[n]].outcome for n in ("b0", "b1", "b3")} == {"created"}
    assert numbers == list(range(numbers[0], numbers[0] + 3))
    clock.at += timedelta(seconds=10)
    scheduler.tick()
    with state.read() as s:
        assert len(s.scalars(select(AutopilotFiring)).all()) == 4  # the same minute: nothing more
