"""The outbound queue (issue 27 §4, service/notify_deliveries.py) on SQLite and PostgreSQL, with a
clock the test sets: a digest channel's messages wait for the hour and go as one; a delivery is
claimed by one server process only (PostgreSQL: a second claim running at the same moment skips the
rows the first holds — FOR UPDATE SKIP LOCKED); failures and 5xx/429 answers are retried with
exponential backoff until the attempts are spent, other 4xx answers are not; every attempt is logged."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from predictorx.service import notify_channels, notify_deliveries as q
from predictorx.service.auth import bootstrap_owner

T0 = datetime(2026, 12, 5, 10, 15, tzinfo=timezone.utc)


def _channel(db, *, digest: str = "off"):
    with db.write() as s:
        _, ws, user = bootstrap_owner(s) or (None, None, None)
        row, _ = notify_channels.add(s, ws.id, user.id, "owner", scope="me", kind="webhook", name="hook",
                                     url="http://127.0.0.1:9/hook", secret="s" * 20, digest=digest)
        return row.id


def _enqueue(db, channel_id: str, n: int, now: datetime) -> list[str]:
    from predictorx.store.inbox_schema import NotifyChannel

    with db.write() as s:
        channel = s.get(NotifyChannel, channel_id)
        return [q.enqueue(s, channel, "assigned", {"event": "assigned", "item": {"title": f"#{i}"}}, now=now).id
                for i in range(n)]


def test_a_digest_channel_waits_for_the_hour_and_sends_one_message(db):
    channel = _channel(db, digest="hourly")
    _enqueue(db, channel, 3, T0)
    with db.write() as s:
        assert q.fold_digests(s, T0 + timedelta(minutes=44)) == 0 and q.claim(s, T0 + timedelta(minutes=44)) == []
    hour = datetime(2026, 12, 5, 11, 0, tzinfo=timezone.utc)
    with db.write() as s:
        assert q.fold_digests(s, hour) == 1
        [claimed] = q.claim(s, hour)
    assert claimed.event == "digest" and claimed.payload["count"] == 3
    assert [i["item"]["title"] for i in claimed.payload["items"]] == ["#0", "#1", "#2"]
    assert claimed.url == "http://127.0.0.1:9/hook" and claimed.secret == "s" * 20  # unsealed in memory only
    assert q.digest_due("daily", T0) == datetime(2026, 12, 6, tzinfo=timezone.utc)


def test_a_delivery_is_claimed_once_even_by_claims_running_at_the_same_moment(db):
    channel = _channel(db)
    ids = set(_enqueue(db, channel, 6, T0))
    if db.engine.dialect.name == "postgresql":  # two server processes' claims, both transactions open
        with db.write() as a:
            first = q.claim(a, T0, limit=4)
            with db.write() as b:
                second = q.claim(b, T0, limit=10)  # skips the four rows `a` holds, without waiting
    else:  # SQLite takes one write transaction at a time
        with db.write() as a:
            first = q.claim(a, T0, limit=4)
        with db.write() as b:
            second = q.claim(b, T0, limit=10)
    assert len(first) == 4 and len(second) == 2 and {c.id for c in first + second} == ids
    with db.write() as c:
        assert q.claim(c, T0 + timedelta(seconds=60)) == []  # claimed: leased, not due again
        again = q.claim(c, T0 + q.LEASE + timedelta(seconds=1))  # a process that died mid-send: its lease ran out
    assert {a.id for a in again} == ids


def test_failures_back_off_exponentially_until_the_attempts_are_spent(db, monkeypatch):
    monkeypatch.setenv("PREDICTORX_NOTIFY_RETRY_BASE", "10")
    monkeypatch.setenv("PREDICTORX_NOTIFY_MAX_ATTEMPTS", "3")
    channel = _channel(db)
    [delivery, refused, busy] = _enqueue(db, channel, 3, T0)
    now = T0
    with db.write() as s:
        row = q.record(s, delivery, q.Outcome(False, 502, "bad gateway", "the receiver answered 502"), now)
        assert row.status == "pending" and row.next_at == now + timedelta(seconds=10)
        row = q.record(s, delivery, q.Outcome(False, None, "", "ConnectError: refused"), now)
        assert row.status == "pending" and row.next_at == now + timedelta(seconds=20)
        row = q.record(s, delivery, q.Outcome(False, 500, "", "the receiver answered 500"), now)
        assert row.status == "failed" and row.attempts == 3
        assert q.record(s, refused, q.Outcome(False, 404, "no such hook", "the receiver answered 404"), now).status == "failed"
        assert q.record(s, busy, q.Outcome(False, 429, "slow down", "the receiver answered 429"), now).status == "pending"
    with db.read() as s:
        from predictorx.store.inbox_schema import NotifyChannel

        [first] = [d for d in q.of_channel(s, s.get(NotifyChannel, channel)) if d["id"] == delivery]
    assert [(a["status_code"], a["excerpt"]) for a in first["log"]] == [
        (502, "bad gateway"), (None, ""), (500, "")]


@pytest.mark.parametrize("url", ["ftp://example.org/x", "http://user:pw@127.0.0.1/x", "notaurl"])
def test_a_webhook_url_is_http_without_credentials(db, url):
    from predictorx.service.errors import Invalid

    with db.write() as s:
        _, ws, user = bootstrap_owner(s) or (None, None, None)
        with pytest.raises(Invalid):
            notify_channels.add(s, ws.id, user.id, "owner", scope="me", kind="webhook", name="x", url=url)


def test_a_webhook_to_a_private_address_is_refused_unless_the_server_allows_it(monkeypatch):
    """Any member adds a webhook and reads the start of its answers in the log: without the
    server's consent it never reaches loopback, private or link-local addresses (no retry either)."""
    from predictorx.service import notify_send

    monkeypatch.delenv(notify_send.ALLOW_PRIVATE_ENV, raising=False)
    for url in ("http://127.0.0.1:9/x", "http://169.254.169.254/latest/meta-data", "http://10.0.0.8/hook",
                "http://localhost:8080/"):
        claimed = q.Claimed("d", "d", "test", {"event": "test"}, "webhook", url, "s" * 20, 0)
        outcome = notify_send.send(claimed)
        assert not outcome.ok and outcome.refused and not outcome.retryable, url
        assert "private address" in (outcome.error or "")
    monkeypatch.setenv(notify_send.ALLOW_PRIVATE_ENV, "1")
    assert notify_send.private_address("http://127.0.0.1:9/x") is None
