"""The clock the autopilot scheduler reads: the system's, or — for tests and benchmarks that
simulate hours in seconds — an instant written in a file (`PREDICTORX_AUTOPILOT_CLOCK_FILE`: one
ISO 8601 UTC time, rewritten by whoever drives the clock). Every replica pointed at the same file
sees the same time."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol


class Clock(Protocol):
    #: The longest the scheduler may sleep without reading the clock again (None: as long as the
    #: next due time says — real time does not jump).
    poll: float | None

    def now(self) -> datetime: ...


class SystemClock:
    poll: float | None = None

    def now(self) -> datetime:
        return datetime.now(timezone.utc)


class FileClock:
    poll: float | None = 0.05

    def __init__(self, path: Path):
        self.path = path
        self._last = datetime.fromtimestamp(0, timezone.utc)

    def now(self) -> datetime:
        try:
            text = self.path.read_text().strip()
            value = datetime.fromisoformat(text) if text else self._last
        except (OSError, ValueError):  # being rewritten: the time it said last
            return self._last
        self._last = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return self._last


def configured() -> Clock:
    path = os.environ.get("PREDICTORX_AUTOPILOT_CLOCK_FILE")
    return FileClock(Path(path)) if path else SystemClock()
