"""Issue 27 §3–4 end to end, real server (and daemon) processes, on SQLite and PostgreSQL: the inbox
lists a failed run for its agent's owner and a waiting workflow gate for the member of its lane, each
for that person only (the other's item answers 404), live in the count, through the API and the CLI;
an outbound webhook is signed (HMAC-SHA256 over timestamp and body), retried after a 500 from a
loopback receiver, logged with the answers, and redelivered; an Apprise preset (`json://`, Apprise's
JSON webhook service) delivers to a loopback stand-in of its service."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2 as httpx
import pytest

from .harness import UNCONFINED, Server, wait_until

SECRET = "whsec-loopback-0123456789abcdef"


class Receiver:
    """A loopback HTTP receiver: records each request; answers the statuses queued, then 200."""

    def __init__(self, statuses: list[int] | None = None):
        self.requests: list[dict] = []
        self.statuses = list(statuses or [])
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                          "body": body})
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                answer = b"receiver down for a moment" if status >= 500 else b"thanks, got it"
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def notify_server(tmp_path, database_url):
    s = Server(tmp_path / "server-home", database_url, PREDICTORX_NOTIFY_RETRY_BASE="0.3",
               PREDICTORX_NOTIFY_ALLOW_PRIVATE="1")  # the receivers are on loopback
    yield s
    s.stop()


def _member(server, name: str) -> tuple[str, str]:
    ws = server.api("GET", "/api/workspaces")[0]["id"]
    body = server.api("POST", f"/api/workspaces/{ws}/members", {"name": name})
    return body["token"], body["user_id"]


def _as(server, token: str, method: str, path: str, body=None) -> httpx.Response:
    return httpx.request(method, f"{server.url}{path}", json=body, headers=server.headers(token), timeout=30)


def test_inbox_lists_a_failed_run_and_a_waiting_gate_for_the_right_person_only(server, start_daemon):
    mia, _ = _member(server, "mia")
    start_daemon()
    server.api("POST", "/api/agents", {"name": "breaker", "provider": "command",
                                       "command": [sys.executable, "-c", "import sys; sys.exit(3)"], **UNCONFINED})
    number = server.api("POST", "/api/issues", {"title": "Break it", "assignee": "breaker"})["number"]
    task = server.wait_task(wait_until(lambda: server.runs(number), 60, what="a task")[0]["id"], timeout=60)
    assert task["status"] == "failed"
    # the owner's inbox (API and CLI) has the failed run; mia's has nothing
    failed = wait_until(lambda: server.api("GET", "/api/inbox")["items"], 30, 0.1, "the failed run in the inbox")
    assert [(i["kind"], i["task_id"]) for i in failed] == [("run_failed", task["id"])]
    listed = json.loads(server.cli("inbox", "list", "--output", "json").stdout)
    assert [i["id"] for i in listed["items"]] == [failed[0]["id"]] and listed["unread"] == 1
    assert _as(server, mia, "GET", "/api/inbox").json()["items"] == []
    assert _as(server, mia, "GET", f"/api/inbox/{failed[0]['id']}").status_code == 404
    # a workflow whose stakeholder lane is mia's: its gate waits for mia, not the owner
    project = server.api("POST", "/api/projects", {"title": "Exports"})
    server.cli("workflow", "bind", project["id"], "agent", "owner", "--kind", "member")
    server.cli("workflow", "bind", project["id"], "stakeholder", "mia", "--kind", "member")
    gated = server.api("POST", "/api/issues", {"title": "CSV export", "project_id": project["id"]})["number"]
    server.cli("workflow", "start", str(gated), "feature-request")
    for step in ("capture", "requirements"):
        server.cli("workflow", "complete", str(gated), "feature-request", step)
    _as(server, mia, "POST", f"/api/issues/{gated}/workflows/feature-request/steps", {"step": "signoff"})
    gate = wait_until(lambda: [i for i in _as(server, mia, "GET", "/api/inbox").json()["items"] if i["kind"] == "gate"],
                      30, 0.1, "the gate in mia's inbox")[0]
    assert gate["link"] == f"/issues/{gated}" and "waits for the stakeholder lane" in gate["title"]
    assert all(i["kind"] != "gate" for i in server.api("GET", "/api/inbox", params={"state": "all"})["items"])
    assert server.http.get(f"/api/inbox/{gate['id']}").status_code == 404
    # the owner is done with the failed run through the CLI
    server.cli("inbox", "done", failed[0]["id"])
    assert server.api("GET", "/api/inbox") == {**server.api("GET", "/api/inbox"), "items": [], "unread": 0}
    bad = server.cli("inbox", "done", gate["id"], check=False)
    assert bad.returncode != 0 and "not found" in bad.stderr
    # subscriptions from the CLI: the owner follows the gated issue, and stops
    server.cli("inbox", "unsubscribe", str(gated))
    assert server.api("GET", f"/api/issues/{gated}/subscription")["subscribed"] is False
    server.cli("inbox", "subscribe", str(gated))
    assert server.api("GET", f"/api/issues/{gated}/subscription") == {"issue": gated, "subscribed": True,
                                                                     "reason": "manual"}


def test_an_outbound_webhook_is_signed_retried_after_a_500_logged_and_redelivered(notify_server):
    server = notify_server
    receiver = Receiver([500])
    try:
        mia, _ = _member(server, "mia")
        url = f"http://127.0.0.1:{receiver.port}/hooks/px?token=abc123"
        r = _as(server, mia, "POST", "/api/notifications/channels",
                {"kind": "webhook", "name": "mine", "url": url, "secret": SECRET, "events": ["assigned", "mention"]})
        assert r.status_code == 201, r.text
        channel = r.json()
        assert "secret" not in channel and channel["label"] == f"http://127.0.0.1:{receiver.port}/…"
        listed = _as(server, mia, "GET", "/api/notifications/channels").text
        assert SECRET not in listed and "abc123" not in listed
        number = server.api("POST", "/api/issues", {"title": "Review the export", "assignee": "mia"})["number"]
        wait_until(lambda: len(receiver.requests) >= 2, 60, 0.1, "the delivery and its retry")
        first, again = receiver.requests[:2]
        for req in (first, again):
            stamp, sent = req["headers"]["x-predictorx-timestamp"], req["headers"]["x-predictorx-signature"]
            expected = "sha256=" + hmac.new(SECRET.encode(), stamp.encode() + b"." + req["body"], hashlib.sha256).hexdigest()
            assert hmac.compare_digest(sent, expected)
            assert req["path"] == "/hooks/px?token=abc123" and req["headers"]["x-predictorx-event"] == "assigned"
        assert first["headers"]["x-predictorx-delivery"] == again["headers"]["x-predictorx-delivery"]
        body = json.loads(again["body"])
        assert body["event"] == "assigned" and body["item"]["link"] == f"/issues/{number}"
        log = wait_until(lambda: (d := _as(server, mia, "GET", f"/api/notifications/channels/{channel['id']}/deliveries")
                                  .json()["deliveries"]) and d[0]["status"] == "delivered" and d, 30, 0.1, "the log")
        [delivery] = log
        assert delivery["attempts"] == 2
        assert [(a["status_code"], a["ok"], a["excerpt"]) for a in delivery["log"]] == [
            (500, False, "receiver down for a moment"), (200, True, "thanks, got it")]
        # redelivered: the same message and delivery id, a new row in the log
        r = _as(server, mia, "POST", f"/api/notifications/deliveries/{delivery['id']}/redeliver")
        assert r.status_code == 202, r.text
        wait_until(lambda: len(receiver.requests) >= 3, 30, 0.1, "the redelivery")
        assert receiver.requests[2]["headers"]["x-predictorx-delivery"] == first["headers"]["x-predictorx-delivery"]
        assert json.loads(receiver.requests[2]["body"])["item"] == body["item"]
        # the owner cannot see mia's channel or redeliver its messages
        assert server.http.get(f"/api/notifications/channels/{channel['id']}/deliveries").status_code == 404
        assert server.http.post(f"/api/notifications/deliveries/{delivery['id']}/redeliver").status_code == 404
    finally:
        receiver.close()


def test_an_apprise_preset_delivers_to_a_loopback_stand_in_of_its_service(notify_server):
    server = notify_server
    receiver = Receiver()
    try:
        url = f"json://127.0.0.1:{receiver.port}/notify"
        p = subprocess.run([sys.executable, "-m", "predictorx", "notify", "add", "phone", "--apprise", "--events",
                            "mention", "--output", "json"], input=url + "\n", env=server.env, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        channel = json.loads(p.stdout)
        assert channel["kind"] == "apprise" and channel["label"] == "json://…" and "secret" not in channel
        server.cli("notify", "test", channel["id"])
        wait_until(lambda: receiver.requests, 60, 0.1, "Apprise's JSON post")
        sent = json.loads(receiver.requests[0]["body"])
        assert receiver.requests[0]["path"] == "/notify"
        assert sent["title"] == "Predictor X: a test of channel 'phone'"
        # a mention of the owner: Apprise delivers it too
        number = server.api("POST", "/api/issues", {"title": "Docs"})["number"]
        mia, _ = _member(server, "mia")
        _as(server, mia, "POST", f"/api/issues/{number}/comments", {"body": "@owner please look"})
        wait_until(lambda: len(receiver.requests) >= 2, 60, 0.1, "the mention through Apprise")
        said = json.loads(receiver.requests[1]["body"])
        assert said["title"] == f"Predictor X: You were mentioned on #{number}: Docs"
        assert said["message"] == "@owner please look"
        log = json.loads(server.cli("notify", "log", channel["id"], "--output", "json").stdout)
        assert [d["status"] for d in log] == ["delivered", "delivered"]
    finally:
        receiver.close()
