"""Cron autopilots on two server replicas sharing one PostgreSQL (issue 27 §5): each due minute
fires exactly once in 10 minutes of simulated time — a clock file both replicas read
(PREDICTORX_AUTOPILOT_CLOCK_FILE), moved by the test in 20-second steps across Europe/Berlin's
spring-forward change, each step waited on until both replicas' schedulers have looked at it. No
real minute is slept through. Then the CLI: list, show (with the pause's reason), fire, replay."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timedelta, timezone

import pytest

from databases import POSTGRES_URL, drop_postgres_schema, postgres_schema_url

from .harness import Server, wait_until

UTC = timezone.utc


def _set_clock(path, at: datetime) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(at.isoformat())
    os.replace(tmp, path)  # a reader sees the old time or the new one, never half a line


def _seen(server: Server, at: datetime) -> bool:
    tick = server.api("GET", "/api/autopilot-scheduler")["last_tick"]
    return tick is not None and datetime.fromisoformat(tick) >= at


@pytest.mark.postgres
@pytest.mark.skipif(not POSTGRES_URL, reason="needs PREDICTORX_TEST_POSTGRES_URL")
def test_two_replicas_fire_each_due_minute_exactly_once(tmp_path):
    url, schema = postgres_schema_url(POSTGRES_URL)
    clock = tmp_path / "clock"
    start = datetime(2026, 3, 29, 0, 55, 30, tzinfo=UTC)  # 01:55:30 CET; at 01:00 UTC clocks go to 03:00 CEST
    _set_clock(clock, start)
    servers: list[Server] = []
    try:
        a = Server(tmp_path / "a-home", url, PREDICTORX_AUTOPILOT_CLOCK_FILE=str(clock))
        servers.append(a)
        (tmp_path / "b-home").mkdir()
        shutil.copy(a.home / "config.json", tmp_path / "b-home" / "config.json")
        b = Server(tmp_path / "b-home", url, PREDICTORX_AUTOPILOT_CLOCK_FILE=str(clock))
        servers.append(b)
        made = b.api("POST", "/api/autopilots", {"name": "minutely", "title": "Tick {{due}}", "cron": "* * * * *",
                                                 "timezone": "Europe/Berlin"})
        assert made["next_due_at"] == "2026-03-29T00:56:00+00:00"

        now = start
        for _ in range(30):  # 10 minutes
            now += timedelta(seconds=20)
            _set_clock(clock, now)
            wait_until(lambda at=now: _seen(a, at) and _seen(b, at), 30, 0.02, f"both schedulers to see {now}")

        firings = a.api("GET", "/api/autopilots/minutely")["firings"]
        due = sorted(f["due_at"] for f in firings)
        assert due == [(datetime(2026, 3, 29, 0, 56, tzinfo=UTC) + timedelta(minutes=i)).isoformat()
                       for i in range(10)], due
        assert {f["trigger"] for f in firings} == {"cron"} and {f["outcome"] for f in firings} == {"created"}
        titles = sorted(i["title"] for i in a.api("GET", "/api/issues") if i["title"].startswith("Tick "))
        assert len(titles) == 10 and "Tick 2026-03-29T01:59+01:00" in titles and "Tick 2026-03-29T03:00+02:00" in titles
        fired = [s.api("GET", "/api/autopilot-scheduler")["fired"] for s in (a, b)]
        assert sum(fired) == 10, fired  # each replica tried every due minute; one of them won each
        assert a.api("GET", "/api/autopilots/minutely")["next_due_at"] == "2026-03-29T01:06:00+00:00"

        _cli_shows_what_happened(a, firings[0]["id"])
    finally:
        for s in servers:
            s.stop()
        drop_postgres_schema(POSTGRES_URL, schema)


def _cli_shows_what_happened(a: Server, firing_id: str) -> None:
    listed = a.cli("autopilot", "list").stdout
    assert "minutely" in listed and "* * * * * (Europe/Berlin)" in listed
    replayed = a.cli("autopilot", "replay", firing_id).stdout
    assert f"replays {firing_id}" in replayed and "created" in replayed
    project = a.api("POST", "/api/projects", {"title": "Ops"})
    a.cli("autopilot", "create", "--name", "nobody-home", "--title", "Check", "--webhook", "--role", "oncall",
          "--project", project["id"], "--failure-limit", "2")
    for _ in range(2):
        assert "failed" in a.cli("autopilot", "fire", "nobody-home").stdout
    shown = a.cli("autopilot", "show", "nobody-home").stdout
    assert "paused: paused itself after 2 consecutive failed firings or runs" in shown and "oncall" in shown
    refused = a.cli("autopilot", "fire", "no-such-autopilot", check=False)
    assert refused.returncode != 0 and "not found" in refused.stderr and "Traceback" not in refused.stderr
