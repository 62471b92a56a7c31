from __future__ import annotations

import pytest

from .harness import Daemon, Server

#: How much of each process's log a failed test's report carries (CI prints only the report).
LOG_TAIL = 4000


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "server_env(**env): the test's server runs with these environment variables "
                                       "(e.g. a daemon timeout longer than the harness's quick 3 s)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failed end-to-end test's report ends with its server's and daemons' logs: a failure seen
    only in CI (at load) can then be read, not guessed at."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for name, path in getattr(item, "_px_logs", {}).items():
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        report.sections.append((f"{name} log (last {LOG_TAIL} characters)", text[-LOG_TAIL:]))


@pytest.fixture
def server(request, tmp_path, database_url):
    env: dict[str, str] = {}
    for marker in reversed(list(request.node.iter_markers("server_env"))):
        env.update(marker.kwargs)
    s = Server(tmp_path / "server-home", database_url, **env)
    request.node.__dict__.setdefault("_px_logs", {})["server"] = s.log_path
    yield s
    s.stop()


@pytest.fixture
def start_daemon(request, server, tmp_path):
    started: list[Daemon] = []

    def start(name: str = "d1", *, wrapper: tuple[str, ...] = (), args: tuple[str, ...] = (), **env: str) -> Daemon:
        d = Daemon(server, tmp_path / f"daemon-{name}", wrapper=wrapper, args=args, **env)
        started.append(d)
        request.node.__dict__.setdefault("_px_logs", {})[f"daemon {name}"] = d.log_path
        return d
    yield start
    for d in started:
        d.stop()
