"""When a cron autopilot is due: a five-field cron expression read on the wall clock of a time zone.

croniter matches the expression on naive wall-clock times only (its own time-zone arithmetic is not
trusted across DST changes); the conversion to UTC instants is zoneinfo's, with these rules:

- a wall time the clocks skip (02:30 on a spring-forward day in Europe/Berlin) is read with the
  offset in force before the change (PEP 495, fold=0): it fires at 03:30 CEST, the same instant
  it would have without the change — not skipped;
- a wall time the clocks repeat (02:30 on a fall-back day) fires once, the first time (fold=0):
  not doubled.

Due instants are strictly increasing, so "the next due time after the one just fired" never
returns it again.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter

from .errors import Invalid

#: How many wall-clock matches to look through for one instant (a repeated hour's worth of
#: minutes is the most ever skipped).
_SEARCH = 200


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # (a folder of the zone database: "America")
        raise Invalid(f"unknown time zone {name!r}; use an IANA name such as Europe/Berlin or UTC") from None


def check(expression: str, tz: str) -> str:
    """The expression, normalised, if it is five cron fields croniter reads; else Invalid."""
    text = " ".join(expression.split())
    if len(text.split(" ")) != 5 or not croniter.is_valid(text):
        raise Invalid(f"{expression!r} is not a cron expression of five fields (minute hour day month weekday), "
                      "e.g. '*/15 * * * *' or '0 9 * * 1-5'")
    next_due(text, tz, datetime.now(timezone.utc))  # one that never comes ("0 0 31 2 *") is refused here
    return text


def _instant(wall: datetime, tz: ZoneInfo) -> datetime:
    return wall.replace(tzinfo=tz, fold=0).astimezone(timezone.utc)


def next_due(expression: str, tz: str, after: datetime) -> datetime:
    """The first due instant strictly after `after` (UTC, aware)."""
    z = zone(tz)
    wall = after.astimezone(z).replace(tzinfo=None)
    it = croniter(expression, wall)
    try:
        for _ in range(_SEARCH):
            candidate = _instant(it.get_next(datetime), z)
            if candidate > after:
                return candidate
    except CroniterError:
        pass
    raise Invalid(f"{expression!r} is never due (no such date after {after.date().isoformat()})")


def latest_due(expression: str, tz: str, at_or_before: datetime, since: datetime) -> datetime:
    """The last due instant in [since, at_or_before]: the one slot fired when the scheduler comes
    back after due times passed with no server running (`since` is the first of them)."""
    z = zone(tz)
    wall = (at_or_before + timedelta(microseconds=1)).astimezone(z).replace(tzinfo=None)
    it = croniter(expression, wall)
    try:
        for _ in range(_SEARCH):
            candidate = _instant(it.get_prev(datetime), z)
            if candidate <= at_or_before:
                return max(candidate, since)
    except CroniterError:
        pass
    return since
