"""Webhook deliveries reach a real HTTP receiver signed as each forge signs them; a replay carries
the same delivery id; a forged one does not verify. The receiver checks with hmac itself."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture
def receiver():
    got: list[tuple[dict[str, str], bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hooks", got
    server.shutdown()
    server.server_close()


def test_deliveries_are_signed_replayable_and_forgeable(any_standin, receiver):
    s = any_standin
    url, got = receiver
    s.create_repo("acme/h")
    s.commit_on_server("acme/h", "feat", {"f": "1"})
    pr = s.open_pr("acme/h", "feat")
    s.submit_review("acme/h", pr.number, "approved", "ship it")
    delivery = s.webhook("review", "acme/h", pr.number)
    assert s.deliver(url, delivery) == 202
    assert s.deliver(url, delivery) == 202  # a replay
    assert s.deliver(url, delivery, tamper=True) == 202
    (h1, b1), (h2, b2), (h3, b3) = got
    assert b1 == b2 == b3 == delivery.body and json.loads(b1)  # the bytes signed are the bytes sent
    mac = hmac.new(s.webhook_secret.encode(), b1, hashlib.sha256).hexdigest()
    if s.kind == "github":
        ids = [h["x-github-delivery"] for h in (h1, h2)]
        assert h1["x-hub-signature-256"] == "sha256=" + mac and h3["x-hub-signature-256"] != "sha256=" + mac
        assert h1["x-github-event"] == "pull_request_review"
    elif s.kind == "gitlab":
        ids = [h["x-gitlab-event-uuid"] for h in (h1, h2)]
        assert h1["x-gitlab-token"] == s.webhook_secret and h3["x-gitlab-token"] != s.webhook_secret
    else:
        ids = [h["x-gitea-delivery"] for h in (h1, h2)]
        assert h1["x-gitea-signature"] == mac and h3["x-gitea-signature"] != mac
        assert h1["x-gitea-event"] == "pull_request_review_approved"
        if s.kind == "forgejo":
            assert h1["x-forgejo-signature"] == mac and h1["x-forgejo-delivery"] == ids[0]
    assert ids[0] == ids[1] == delivery.delivery_id
