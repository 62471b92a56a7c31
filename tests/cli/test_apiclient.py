"""The CLI's HTTP client on the standard library (issue 23, item 9): what it sends, where it sends
it (the environment's proxy, as any HTTP client, unless NO_PROXY says otherwise) and the one
sentence each failure becomes."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from predictorx.apiclient import Client, CliError, query


class Recorder(BaseHTTPRequestHandler):
    """Answers every request with what it received (a server, or a proxy: the request line says)."""

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status = int(self.headers.get("X-Answer-Status") or 200)
        out = json.dumps({"detail": "no such issue"} if status >= 400 else {
            "line": self.requestline, "host": self.headers["Host"], "if_match": self.headers.get("If-Match"),
            "auth": self.headers.get("Authorization"), "body": body.decode()}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def _no_proxy_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_a_request_carries_the_token_the_body_and_the_query(recorder: str) -> None:
    seen = Client(server_url=recorder, token="pxt_me").post("/api/x", {"a": 1}, params={"after": None, "all": True},
                                                            headers={"If-Match": "etag-1"})
    assert seen["line"] == "POST /api/x?after=&all=true HTTP/1.1"
    assert seen["auth"] == "Bearer pxt_me" and seen["if_match"] == "etag-1" and json.loads(seen["body"]) == {"a": 1}
    assert query({"s": ["a", "b"], "n": 3, "q": "x y#"}) == "s=a&s=b&n=3&q=x+y%23"


def test_the_environment_proxy_carries_a_request_unless_no_proxy_names_the_host(
        recorder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", recorder)
    seen = Client(server_url="http://px.example.test:8484", token="t").get("/api/me")
    assert seen["line"] == "GET http://px.example.test:8484/api/me HTTP/1.1"  # the proxy got the absolute URL
    assert seen["host"] == "px.example.test:8484"
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # would refuse: the request must not go there
    assert Client(server_url=recorder, token="t").get("/api/me")["line"] == "GET /api/me HTTP/1.1"


def test_each_failure_is_one_sentence(recorder: str) -> None:
    with pytest.raises(CliError, match="^no such issue$"):
        Client(server_url=recorder, token="t").get("/api/issues/9", headers={"X-Answer-Status": "404"})
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(CliError, match="cannot reach the Predictor X server at http://127.0.0.1:"):
        Client(server_url=f"http://127.0.0.1:{port}", token="t").get("/api/me")
    with pytest.raises(CliError, match="is not an http:// or https:// URL"):
        Client(server_url="ftp://127.0.0.1", token="t")


def test_a_server_that_never_answers_is_a_timeout_sentence() -> None:
    with socket.socket() as listener:  # accepts (the kernel does) and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        with pytest.raises(CliError, match="did not answer in time"):
            Client(server_url=url, token="t", timeout=0.5).get("/api/me")
