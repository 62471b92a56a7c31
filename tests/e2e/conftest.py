from __future__ import annotations

import pytest

from .harness import Daemon, Server


@pytest.fixture
def server(tmp_path, database_url):
    s = Server(tmp_path / "server-home", database_url)
    yield s
    s.stop()


@pytest.fixture
def start_daemon(server, tmp_path):
    started: list[Daemon] = []

    def start(name: str = "d1", *, wrapper: tuple[str, ...] = (), args: tuple[str, ...] = (), **env: str) -> Daemon:
        d = Daemon(server, tmp_path / f"daemon-{name}", wrapper=wrapper, args=args, **env)
        started.append(d)
        return d
    yield start
    for d in started:
        d.stop()
