"""pytest fixtures for the forge stand-ins: `pytest_plugins = ["forgestand.fixtures"]` in a conftest.

Every stand-in a test starts is stopped at teardown, and the test FAILS there when the stand-in
recorded a violation (a request or answer its forge's description refuses)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator

import pytest

from .standin import StandIn, start_standin

KINDS = ("github", "gitlab", "gitea", "forgejo")


@pytest.fixture
def forge_standin_factory(tmp_path: Path) -> Iterator[Callable[[str], StandIn]]:
    started: list[StandIn] = []

    def start(kind: str) -> StandIn:
        standin = start_standin(kind, tmp_path / f"standin-{kind}-{len(started)}")
        started.append(standin)
        return standin

    yield start
    for standin in started:
        standin.stop()
    problems = [f"{s.kind}: {v}" for s in started for v in s.violations]
    if problems:
        pytest.fail("the forge stand-in recorded violations of the forge's API description:\n  "
                    + "\n  ".join(problems[:20]), pytrace=False)


@pytest.fixture
def github_standin(forge_standin_factory) -> StandIn:
    return forge_standin_factory("github")


@pytest.fixture
def gitlab_standin(forge_standin_factory) -> StandIn:
    return forge_standin_factory("gitlab")


@pytest.fixture
def gitea_standin(forge_standin_factory) -> StandIn:
    return forge_standin_factory("gitea")


@pytest.fixture
def forgejo_standin(forge_standin_factory) -> StandIn:
    return forge_standin_factory("forgejo")


@pytest.fixture(params=KINDS)
def any_standin(request, forge_standin_factory) -> StandIn:
    return forge_standin_factory(request.param)


@dataclass
class Receiver:
    """A loopback HTTP endpoint that records what is POSTed to it (headers lower-cased, raw body)."""

    url: str
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    status: int = 202

    def wait_for(self, count: int, timeout: float = 10) -> list[tuple[dict[str, str], bytes]]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.received)} deliveries arrived, {count} expected")
            time.sleep(0.01)  # waiting for a condition (the deliveries), not for time
        return self.received


@pytest.fixture
def webhook_receiver() -> Iterator[Receiver]:
    """Where a test points a stand-in's webhooks when the server under test is not the receiver."""
    receiver = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(receiver.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield receiver
    server.shutdown()
    server.server_close()
