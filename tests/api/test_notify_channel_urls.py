"""A channel's URL is checked where it is taken (issue 27 §4, service/notify_channels.check_url —
the API, `predictorx notify add` through it and the Notifications page): a URL that is no URL (an
unclosed or stray bracket, a port that cannot exist, an Apprise server option that is no host)
answers 422 with a sentence saying what is wrong and what a valid one looks like, and stores
nothing — never a 500. Only loopback traffic: every other name lookup fails here."""

from __future__ import annotations

import socket

import pytest
from starlette.testclient import TestClient

from predictorx.service import notify_channels, notify_guard
from predictorx.service.errors import Invalid
from predictorx.store.inbox_schema import NotifyChannel

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
