"""What every scripted model server shares: the HTTP server thread, the recording, the script."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Recorded:
    """One request as the model server received it."""
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.time)
    #: What the script made of it: "tool" (asked for the shell tool), "answer", or "aside"
    #: (a side request — a title, a router, a token count — answered with plain text).
    turn: str = ""

    @property
    def text(self) -> str:
        """The whole body as text, for "was the model shown X" assertions."""
        return json.dumps(self.body, ensure_ascii=False)


@dataclass
class Reply:
    status: int = 200
    #: Server-sent events as (event name or None, JSON payload or a raw string) pairs.
    events: list[tuple[str | None, Any]] | None = None
    json_body: Any = None
    #: Seconds between events: streamed one by one (a slow model), not sent as one body.
    pace_s: float = 0.0


class ModelServer:
    """A scripted model on 127.0.0.1; subclasses speak one wire protocol.

    `command` is what turn 1 asks the CLI's shell tool to run (a string, or a function of the
    request number for per-request commands); `answer` is the final text of turn 2.
    """

    protocol = ""
    model = "scripted-model"

    def __init__(self, command: str | Callable[[int], str] = "pwd", answer: str = "Done.") -> None:
        self.command = command
        self.answer = answer
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._ids = 0
        self._run = uuid.uuid4().hex[:10]
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=f"{self.protocol}-model", daemon=True)

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> ModelServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- what tests read ------------------------------------------------------------------------
    def conversation(self) -> list[Recorded]:
        """The requests of the agent's own conversation (tool calls and answers, not asides)."""
        return [r for r in self.requests if r.turn in ("tool", "answer")]

    def wait_for(self, check: Callable[[list[Recorded]], Any], timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                value = check(list(self.requests))
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"{self.protocol} model server: timed out; requests so far: "
                             f"{[(r.path, r.turn) for r in self.requests]}")

    # -- protocol hooks -------------------------------------------------------------------------
    def reply(self, req: Recorded) -> Reply:
        raise NotImplementedError

    def next_id(self, prefix: str) -> str:
        """Unique across servers too: a resumed session holds the ids of an earlier server's replies."""
        with self._lock:
            self._ids += 1
            return f"{prefix}{self._run}{self._ids:04d}"

    def command_for(self, req: Recorded) -> str:
        if callable(self.command):
            return self.command(len(self.conversation()))
        return self.command

    # -- HTTP -----------------------------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet: the recording is the log
                pass

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def do_HEAD(self) -> None:
                self._send(200, b"", "text/plain")

            def _serve(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                url = urlsplit(self.path)
                req = Recorded(method, url.path, parse_qs(url.query), {k.lower(): v for k, v in self.headers.items()}, body)
                try:
                    reply = server.reply(req)
                except Exception as exc:  # noqa: BLE001 — a broken script says so to the CLI and the test
                    reply = Reply(500, json_body={"error": {"type": "fixture_error", "message": repr(exc)}})
                with server._lock:
                    server.requests.append(req)
                if reply.events is not None and reply.pace_s > 0:
                    self._stream(reply.status, reply.events, reply.pace_s)
                elif reply.events is not None:
                    self._send(reply.status, _sse(reply.events), "text/event-stream")
                else:
                    self._send(reply.status, json.dumps(reply.json_body).encode(), "application/json")

            def _stream(self, status: int, events: list[tuple[str | None, Any]], pace_s: float) -> None:
                """One event every `pace_s` seconds; the body ends when the connection closes."""
                self.send_response(status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for i, event in enumerate(events):
                    if i:
                        time.sleep(pace_s)
                    self.wfile.write(_sse([event]))
                    self.wfile.flush()

            def _send(self, status: int, payload: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

        return Handler


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


def tool_arguments(schema: dict[str, Any] | None, given: dict[str, Any]) -> dict[str, Any]:
    """`given`, plus a short string for every other property the tool's schema requires."""
    args = dict(given)
    for name in (schema or {}).get("required") or []:
        if name not in args:
            kind = ((schema.get("properties") or {}).get(name) or {}).get("type")
            args[name] = {"boolean": False, "integer": 0, "number": 0}.get(kind, "run the task's command")
    return args
