"""The CLI against a real server over HTTP, served in this process (so what a test registers in
it — a test-only forge kind — is there): `served_app` starts one, `run_cli` runs `predictorx ARGS`
in-process and answers (exit code, stdout, stderr)."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import uvicorn

from predictorx.program import main
from predictorx.server.app import create_app
from predictorx.server.run import bootstrap
from predictorx.store.db import Database

from databases import sqlite_copy
from predictorx.testing import bound_socket

CliRun = Callable[..., tuple[int, str, str]]


@pytest.fixture
def served_app(tmp_path, monkeypatch, sqlite_template) -> Iterator[str]:
    """A server on a temp SQLite database; the CLI's PREDICTORX_SERVER_URL and _TOKEN point at it."""
    db = Database(sqlite_copy(sqlite_template, tmp_path / "px.db"))  # at head (tests/databases.py)
    sock = bound_socket()  # held from here on: no other process can take the port before the server listens
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    token = bootstrap(db, url)
    srv = uvicorn.Server(uvicorn.Config(create_app(db, migrate=False, web=False), host="127.0.0.1", port=port,
                                        log_level="warning", access_log=False))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    monkeypatch.setenv("PREDICTORX_SERVER_URL", url)
    monkeypatch.setenv("PREDICTORX_TOKEN", token)
    yield url
    srv.should_exit = True
    thread.join(timeout=10)
    sock.close()
    db.dispose()


@pytest.fixture
def run_cli(monkeypatch, capsys) -> CliRun:
    def run(*args: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = 0
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        out = capsys.readouterr()
        return code, out.out, out.err
    return run
