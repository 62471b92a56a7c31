"""A channel's URL is checked where it is taken (issue 27 §4, service/notify_channels.check_url —
the API, `predictorx notify add` through it and the Notifications page): a URL that is no URL (an
unclosed or stray bracket, a port that cannot exist, an Apprise server option that is no host)
answers 422 with a sentence saying what is wrong and what a valid one looks like, and stores
nothing — never a 500. A row stored before that check cannot stop the notifier: its delivery fails
at once with the sentence (not retried) and the other channels' deliveries go. Only loopback
traffic: every other name lookup fails here."""

from __future__ import annotations

import socket

import pytest
from starlette.testclient import TestClient

from predictorx.server.notifier import deliver_due
from predictorx.service import notify_channels, notify_guard, secretbox
from predictorx.service.errors import Invalid
from predictorx.store.inbox_schema import NotifyChannel, NotifyDelivery
from service.test_notify_guard import receiver  # noqa: F401  (its loopback stand-in of a JSON service)

BAD = [
    ("webhook", "http://[::1", "malformed"),
    ("webhook", "http://]x/", "malformed"),
    ("webhook", "http://[x]/hook", "malformed"),
    ("webhook", "https://h:99999/", "1 to 65535"),
    ("webhook", "https://h:0/", "1 to 65535"),
    ("webhook", "https://h:abc/", "1 to 65535"),
    ("webhook", "https://hooks.example.org/a b", "no spaces"),
    ("apprise", "mailto://u:p@example.com?smtp=[::1", "smtp="),
    ("apprise", "mailto://u:p@example.com?smtp=mail.example.com:99999", "1 to 65535"),
    ("apprise", "json://h:99999/x", "1 to 65535"),
    ("apprise", "json://[::1/x", "malformed"),
    ("apprise", "ntfy://topic\nx", "control characters"),
]


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """No name lookup leaves this machine: anything but loopback fails to resolve."""
    real = socket.getaddrinfo

    def lookup(host, port, *args, **kwargs):
        if host in ("127.0.0.1", "::1", "localhost"):
            return real(host, port, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, f"{host} does not resolve (test)")

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    monkeypatch.setattr(notify_guard, "_lookup", lookup)


def _member(api):
    ws = api.get("/api/workspaces").json()[0]["id"]
    body = api.post(f"/api/workspaces/{ws}/members", json={"name": "mia", "role": "member"}).json()
    return type(api)(TestClient(api.client.app, raise_server_exceptions=False), body["token"])


def _stored(db) -> int:
    with db.read() as s:
        return s.query(NotifyChannel).count()


@pytest.mark.parametrize("kind,url,said", BAD)
def test_a_url_that_is_no_url_answers_422_with_a_sentence_and_stores_nothing(api, db, kind, url, said):
    member = _member(api)
    r = member.post("/api/notifications/channels", json={"kind": kind, "name": "n", "url": url})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and said in detail and "like" in detail, detail
    assert _stored(db) == 0 and member.get("/api/notifications/channels").json() == []


@pytest.mark.parametrize("kind,url", [("webhook", "https://hooks.example.org:8443/x"),
                                      ("webhook", "http://[2001:db8::1]:8080/hook"),
                                      ("webhook", "https://hooks.example.org:/x"),
                                      ("apprise", "tgram://123456789:AAHabcdefghijklmnopqrstuvwxyz012345/12345"),
                                      ("apprise", "json://hooks.example.org:8080/x"),
                                      ("apprise", "ntfy://topic")])
def test_a_sound_url_is_taken(kind, url):
    """(Telegram's bot token follows a colon where a port would: only a number there is one.)"""
    assert notify_channels.url_problem(kind, url) is None
    if kind == "webhook":
        assert notify_channels.check_url(kind, url).endswith("/…")


def test_the_one_check_raises_invalid():
    with pytest.raises(Invalid, match="1 to 65535"):
        notify_channels.check_url("webhook", "https://h:99999/")


@pytest.mark.parametrize("kind,url", [("webhook", "http://[::1"), ("webhook", "https://h:99999/"),
                                      ("apprise", "mailto://u:p@example.com?smtp=[::1")])
def test_a_stored_bad_url_fails_its_delivery_at_once_and_the_others_go(app, db, receiver, monkeypatch, kind, url):  # noqa: F811 (the fixture)
    """One round of the notifier (no server running: nothing else sends meanwhile)."""
    from predictorx.service import notify_deliveries as q
    from predictorx.service.auth import bootstrap_owner
    from predictorx.store.schema import utcnow

    monkeypatch.setenv(notify_guard.ALLOW_PRIVATE_ENV, "1")  # (the good channel's receiver is on loopback)
    port, got = receiver
    with db.write() as s:
        _, ws, user = bootstrap_owner(s) or (None, None, None)
        old, good = (notify_channels.add(s, ws.id, user.id, "owner", scope="me", kind="webhook", name=name,
                                         url=f"http://127.0.0.1:{port}/{name}")[0] for name in ("old", "good"))
        old.kind = kind  # a row saved before URLs were checked when added
        secretbox.seal_into(old, "url_sealed", url, secretbox.load_keyring())
        now = utcnow()
        bad_delivery, good_delivery = (q.enqueue(s, c, "test", {"event": "test", "item": {"title": c.name}},
                                                 now=now).id for c in (old, good))
    assert deliver_due(app.state.px) == 2
    assert len(got) == 1 and b'"title":"good"' in got[0]
    with db.read() as s:
        bad, fine = s.get(NotifyDelivery, bad_delivery), s.get(NotifyDelivery, good_delivery)
        assert fine.status == "delivered"
        assert bad.status == "failed" and bad.attempts == 1  # not retried: trying again changes nothing
        assert bad.last_error.startswith("the channel's URL cannot be sent to: ") and "remove the channel" in bad.last_error
    assert deliver_due(app.state.px) == 0
