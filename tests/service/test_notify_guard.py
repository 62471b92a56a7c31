"""Apprise URLs are held to the same refusal as webhooks (issue 27 §4): without the server's consent
(PREDICTORX_NOTIFY_ALLOW_PRIVATE=1) a notification never reaches loopback, private or link-local
addresses — when the channel is added, before each send (DNS can change in between), and for any
host Apprise's plugin looks up while sending. Only loopback traffic: other ranges are tested through
the classification and names this test resolves itself (notify_guard.resolve overridden)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlalchemy import select

from predictorx.service import notify_channels, notify_deliveries as q, notify_guard, notify_send
from predictorx.service.auth import bootstrap_owner
from predictorx.service.errors import Invalid
from predictorx.store.schema import Member

PUBLIC = "93.184.216.34"  # (only ever classified here, never contacted)


@pytest.fixture
def no_private(monkeypatch):
    monkeypatch.delenv(notify_guard.ALLOW_PRIVATE_ENV, raising=False)


@pytest.fixture
def names(monkeypatch):
    """Names this test resolves itself: anything else fails to resolve (no DNS query leaves)."""
    table: dict[str, list[str]] = {"localhost": ["127.0.0.1"]}

    def resolve(host: str, port: int) -> list[str]:
        if host in table:
            return table[host]
        raise OSError(f"{host} does not resolve (test)")

    monkeypatch.setattr(notify_guard, "resolve", resolve)
    return table


@pytest.fixture
def receiver():
    """A loopback stand-in of a JSON notification service: records each request."""
    got: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            got.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"internal secret answer")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], got
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "10.0.0.8", "172.16.5.4", "192.168.1.1",
                                     "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "::1", "fe80::1",
                                     "fe80::1%eth0", "fc00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::"])
def test_non_global_addresses_are_private(address):
    assert notify_guard.is_private(address)


@pytest.mark.parametrize("address", [PUBLIC, "1.1.1.1", "2606:4700:4700::1111", "::ffff:93.184.216.34"])
def test_global_addresses_are_not(address):
    assert not notify_guard.is_private(address)


def _add(db, url: str):
    with db.write() as s:
        made = bootstrap_owner(s)
        if made is None:  # (the second channel of a test)
            member = s.scalars(select(Member)).first()
            ws_id, user_id = member.workspace_id, member.user_id
        else:
            ws_id, user_id = made[1].id, made[2].id
        row, _ = notify_channels.add(s, ws_id, user_id, "member", scope="me", kind="apprise", name="x", url=url)
        return row


@pytest.mark.parametrize("url", ["json://127.0.0.1:9/x", "json://localhost:9/x", "xml://[::1]:9/x",
                                 "form://169.254.169.254/latest/meta-data", "json://internal.test/x",
                                 "mailto://user:pw@mail.test?smtp=127.0.0.1", "ntfy://10.1.2.3/topic"])
def test_an_apprise_url_naming_a_private_address_is_refused_when_added(db, no_private, names, url):
    names["internal.test"] = ["10.9.8.7"]
    names["mail.test"] = [PUBLIC]
    with pytest.raises(Invalid, match="private address"):
        _add(db, url)


def test_the_server_may_allow_private_addresses(db, names, monkeypatch):
    monkeypatch.setenv(notify_guard.ALLOW_PRIVATE_ENV, "1")
    assert _add(db, "json://127.0.0.1:9/x").label == "json://…"


def test_a_name_that_is_no_host_passes_the_check_when_added(db, no_private, names):
    # Discord's URL names a webhook id and a token, no host: what it contacts is checked at send.
    assert _add(db, "discord://1234567890/abcdefTOKEN").label == "discord://…"
    names["hooks.test"] = [PUBLIC]
    assert _add(db, "json://hooks.test/x").label == "json://…"


def _claimed(url: str) -> q.Claimed:
    return q.Claimed("d", "d", "test", {"event": "test", "item": {"title": "t"}}, "apprise", url, None, 0)


def test_a_name_that_resolves_to_loopback_by_the_time_of_sending_is_refused(db, no_private, names, receiver):
    port, got = receiver
    names["hooks.test"] = [PUBLIC]
    _add(db, f"json://hooks.test:{port}/x")  # public when added
    names["hooks.test"] = ["127.0.0.1"]  # then the name moves to loopback (DNS rebinding)
    outcome = notify_send.send(_claimed(f"json://hooks.test:{port}/x"))
    assert not outcome.ok and outcome.refused and not outcome.retryable
    assert "private address" in (outcome.error or "") and outcome.excerpt == ""
    assert got == []


def test_a_host_the_plugin_looks_up_while_sending_is_refused_if_private(no_private, receiver, monkeypatch):
    """Whatever the URL names, every lookup Apprise makes while sending is checked: here the checks
    of the named hosts are bypassed (as for a plugin whose server the URL does not spell), and the
    send is still refused before any connection — the loopback receiver hears nothing."""
    port, got = receiver
    monkeypatch.setattr(notify_guard, "named_hosts", lambda url: [])
    outcome = notify_send.send(_claimed(f"json://127.0.0.1:{port}/x"))
    assert not outcome.ok and outcome.refused, outcome
    assert "127.0.0.1" in (outcome.error or "") and "internal secret answer" not in outcome.excerpt
    assert got == []
    monkeypatch.setenv(notify_guard.ALLOW_PRIVATE_ENV, "1")  # the server's consent: it is delivered
    assert notify_send.send(_claimed(f"json://127.0.0.1:{port}/x")).ok
    assert len(got) == 1


def test_outside_a_send_lookups_are_not_refused(no_private):
    import socket

    with notify_guard.connections():
        with pytest.raises(notify_guard.PrivateAddressRefused):
            socket.getaddrinfo("127.0.0.1", 80)
    assert socket.getaddrinfo("127.0.0.1", 80)  # other code of the server resolves as before


def test_a_webhook_whose_name_moves_to_loopback_between_check_and_connection_is_refused(no_private, receiver,
                                                                                        monkeypatch):
    """The webhook's check resolves its host, then the connection resolves it again: a name that
    answers a public address to the check and loopback to the connection (DNS rebinding) is refused
    at the connection's own lookup — the loopback receiver hears nothing. The check is made to see a
    public address here; the connection's lookup is the real one (an IP literal, no DNS)."""
    port, got = receiver
    monkeypatch.setattr(notify_guard, "resolve", lambda host, port: [PUBLIC])
    claimed = q.Claimed("d", "d", "test", {"event": "test"}, "webhook", f"http://127.0.0.1:{port}/x", "s" * 20, 0)
    outcome = notify_send.send(claimed)
    assert not outcome.ok and outcome.refused and not outcome.retryable, outcome
    assert "127.0.0.1" in (outcome.error or "") and "internal secret answer" not in outcome.excerpt
    assert got == []
    monkeypatch.setenv(notify_guard.ALLOW_PRIVATE_ENV, "1")  # the server's consent: it is delivered
    assert notify_send.send(claimed).ok and len(got) == 1
