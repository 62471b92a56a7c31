"""The forge clients' one HTTP mechanism (forges/httpclient.py) against a small loopback server:
error mapping, the forge's own sentence, conditional GETs, redirects, and the token kept out of
logs and errors."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest

from predictorx.forges.base import Connection, ForgeRefused, ForgeUnavailable
from predictorx.forges.httpclient import USER_AGENT, ForgeApi, refusal_text

TOKEN = "tok-" + "s3cr3t" * 4
seen: list[dict[str, str]] = []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        seen.append({k.lower(): v for k, v in self.headers.items()} | {"path": self.path})
        routes = {
            "/ok": (200, {"ETag": '"v1"'}, b'{"login": "bot"}'),
            "/teapot": (422, {}, json.dumps({"message": "Validation Failed", "errors": [
                {"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for a:b."}]}).encode()),
            "/gitlab-field-errors": (400, {}, b'{"message": {"title": ["can\'t be blank"]}}'),
            "/gitlab-error": (403, {}, b'{"error": "insufficient_scope"}'),
            "/down": (502, {}, b"<html>bad gateway</html>"),
            "/slow-down": (429, {"Retry-After": "30"}, b'{"message": "API rate limit exceeded"}'),
            "/github-limit": (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "4102444800"},
                              b'{"message": "API rate limit exceeded for user ID 1."}'),
            "/forbidden": (403, {}, b'{"message": "Resource not accessible by personal access token"}'),
            "/garbage": (200, {}, b"<html>not json</html>"),
            "/gone": (404, {}, b'{"message": "Not Found"}'),
            "/moved": (301, {"Location": "/ok"}, b""),
            "/away": (302, {"Location": "http://127.0.0.2:9/steal"}, b""),
        }
        if self.path.startswith("/ok") and self.headers.get("If-None-Match") == '"v1"':
            status, headers, body = 304, {"ETag": '"v1"'}, b""
        else:
            status, headers, body = routes.get(self.path.split("?")[0], (404, {}, b"{}"))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def conn() -> Iterator[Connection]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    seen.clear()
    yield Connection("github", "http://x", f"http://127.0.0.1:{server.server_address[1]}", TOKEN)
    server.shutdown()
    server.server_close()


API = ForgeApi("Forge", lambda token: {"Authorization": f"Bearer {token}"})


def test_answers_and_conditional_get(conn: Connection) -> None:
    first = API.call(conn, "GET", "/ok")
    assert first.status == 200 and first.body == {"login": "bot"} and first.validators == {"etag": '"v1"'}
    again = API.call(conn, "GET", "/ok", validators=first.validators)
    assert again.status == 304 and again.body is None
    assert seen[0]["user-agent"] == USER_AGENT and seen[1]["if-none-match"] == '"v1"'


@pytest.mark.parametrize("path,status,words", [
    ("/teapot", 422, "Validation Failed; A pull request already exists for a:b."),
    ("/gitlab-field-errors", 400, "title can't be blank"),
    ("/gitlab-error", 403, "insufficient_scope"),
    ("/gone", 404, "Not Found"),
])
def test_a_refusal_carries_the_forges_sentence(conn: Connection, path: str, status: int, words: str) -> None:
    with pytest.raises(ForgeRefused) as refused:
        API.call(conn, "GET", path)
    assert refused.value.status == status and words in str(refused.value)


@pytest.mark.parametrize("path", ["/down", "/garbage"])
def test_unavailable(conn: Connection, path: str) -> None:
    with pytest.raises(ForgeUnavailable):
        API.call(conn, "GET", path)


def test_rate_limits_are_unavailable_with_the_wait(conn: Connection) -> None:
    with pytest.raises(ForgeUnavailable) as limited:
        API.call(conn, "GET", "/slow-down")
    assert limited.value.retry_after == 30.0 and "API rate limit exceeded" in str(limited.value)
    with pytest.raises(ForgeUnavailable) as github:
        API.call(conn, "GET", "/github-limit")
    assert github.value.retry_after is not None and github.value.retry_after > 3600
    with pytest.raises(ForgeRefused) as forbidden:  # a 403 that is not a rate limit is a refusal
        API.call(conn, "GET", "/forbidden")
    assert forbidden.value.status == 403 and "personal access token" in str(forbidden.value)


def test_missing_is_an_answer_when_asked(conn: Connection) -> None:
    assert API.call(conn, "GET", "/gone", accept_missing=True).status == 404


def test_redirects_stay_on_the_forge(conn: Connection) -> None:
    assert API.call(conn, "GET", "/moved").body == {"login": "bot"}
    with pytest.raises(ForgeRefused, match="another server"):
        API.call(conn, "GET", "/away")
    assert not any(s["path"] == "/steal" for s in seen)


def test_the_token_is_in_no_log_and_no_error(conn: Connection, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    messages = []
    for path in ("/ok", "/teapot", "/down", "/garbage", "/away"):
        try:
            API.call(conn, "GET", path)
        except (ForgeRefused, ForgeUnavailable) as e:
            messages.append(str(e))
    unreachable = Connection("github", "http://x", "http://127.0.0.1:9", TOKEN)
    with pytest.raises(ForgeUnavailable) as e:
        API.call(unreachable, "GET", "/ok")
    messages.append(str(e.value))
    assert seen and all(s["authorization"] == f"Bearer {TOKEN}" for s in seen)
    assert TOKEN not in caplog.text and not any(TOKEN in m for m in messages)


def test_refusal_text_shapes() -> None:
    assert refusal_text({"message": "405 Method Not Allowed"}) == "405 Method Not Allowed"
    assert refusal_text({"message": ["a", "b"]}) == "a; b"
    assert refusal_text({"errors": [{"field": "base", "code": "invalid"}]}) == "base invalid"
    assert refusal_text("plain words\n") == "plain words"
    assert refusal_text(None) == ""
