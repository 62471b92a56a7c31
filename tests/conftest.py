"""Shared fixtures: isolated state dirs, databases on SQLite and (when configured) PostgreSQL."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from databases import (BACKENDS, POSTGRES, POSTGRES_URL, build_shared_templates, drop_postgres_schema,
                       migrated_sqlite_template, postgres_schema_url, shared_sqlite_template, sqlite_copy)

@pytest.fixture(scope="session", autouse=True)
def _isolated_home_for_wider_fixtures(tmp_path_factory: pytest.TempPathFactory):
    """Module- and session-scoped fixtures run before the per-test isolation below: a bootstrap in
    one (tests/api/test_access_matrix.py's `world`) wrote its server URL and token into the person's
    real state dir. For the whole session the state lives in a temp dir too."""
    home = tmp_path_factory.mktemp("pxhome-session")
    names = ("PREDICTORX_HOME", "PREDICTORX_WORKSPACES_ROOT", "PREDICTORX_LOCK_DIR", "AGENTS_ROOM_DB")
    saved = {n: os.environ.get(n) for n in names}
    os.environ.update({"PREDICTORX_HOME": str(home / "state"), "PREDICTORX_WORKSPACES_ROOT": str(home / "workspaces"),
                       "PREDICTORX_LOCK_DIR": str(home / "locks"), "AGENTS_ROOM_DB": str(home / "agents-room" / "room.db")})
    yield
    for n, v in saved.items():
        if v is None:
            os.environ.pop(n, None)
        else:
            os.environ[n] = v


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test ever touches the user's real state dir, workspaces root or agents-room db."""
    home = tmp_path_factory.mktemp("pxhome")
    monkeypatch.setenv("PREDICTORX_HOME", str(home / "state"))
    monkeypatch.setenv("PREDICTORX_WORKSPACES_ROOT", str(home / "workspaces"))
    monkeypatch.setenv("PREDICTORX_LOCK_DIR", str(home / "locks"))
    monkeypatch.setenv("AGENTS_ROOM_DB", str(home / "agents-room" / "room.db"))  # a folder of its own: mounted in sandboxed runs
    # The suite runs as root in a throwaway machine: Claude Code agents may bypass permissions
    # there (tests of the refusal remove it).
    monkeypatch.setenv("IS_SANDBOX", "1")
    for var in ("PREDICTORX_SERVER_URL", "PREDICTORX_TOKEN", "PREDICTORX_DATABASE_URL", "PREDICTORX_WORKSPACE"):
        monkeypatch.delenv(var, raising=False)
    for var, value in (("GIT_AUTHOR_NAME", "Test"), ("GIT_AUTHOR_EMAIL", "test@example.com"),
                       ("GIT_COMMITTER_NAME", "Test"), ("GIT_COMMITTER_EMAIL", "test@example.com")):
        monkeypatch.setenv(var, value)
    return home


@pytest.fixture(autouse=True)
def _event_streams_not_stopped() -> None:
    """sse-starlette patches uvicorn's `Server.handle_exit` to set one process-wide flag that ends
    every event stream, and nothing clears it: one test that stops a server as a signal would (the
    quiet server's) ended the event streams of every server started later in the same pytest run —
    a page's live updates then never came (the browser tests' 'live-on' waits timed out). A server
    process stops once; a test run starts hundreds, so each test starts with the flag down."""
    from sse_starlette.sse import AppStatus

    AppStatus.should_exit = False


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database at the migrations' head: the one the controller of a parallel run built, or
    migrated once in this test process (tests/databases.py)."""
    return shared_sqlite_template() or migrated_sqlite_template(tmp_path_factory.mktemp("template") / "px.db")


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path):
    """A database of this test's own, already at the migrations' head."""
    if request.param == "sqlite":
        yield sqlite_copy(sqlite_template, tmp_path / "px.db")
        return
    name = POSTGRES.migrated()
    try:
        yield POSTGRES.url(name)
    finally:
        POSTGRES.drop_later(name)


@pytest.fixture(params=BACKENDS)
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path):
    """An empty database, for the tests of the migrations themselves."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'px.db'}"
        return
    url, schema = postgres_schema_url(POSTGRES_URL)
    try:
        yield url
    finally:
        drop_postgres_schema(POSTGRES_URL, schema)


@pytest.fixture
def db(database_url: str):
    from predictorx.store.db import Database

    database = Database(database_url)
    yield database
    database.dispose()


def _expected_length(item: pytest.Item) -> int:
    """0 for the longest tests (a timeout of 15 min or more: the fuzz runs, mypy, the harness flow),
    1 for tests that start real servers, daemons and agent CLIs, 2 for the rest."""
    marker = item.get_closest_marker("timeout")
    if marker and marker.args and marker.args[0] >= 900:
        return 0
    return 1 if any(part in item.nodeid for part in ("tests/e2e/", "tests/realcli/")) else 2


def _end_to_end_on_postgres(item: pytest.Item) -> bool:
    """An end-to-end test's PostgreSQL run: the scenario of its SQLite run again, through real
    server and daemon processes (82 tests, 2,700 of the suite's 15,450 test-seconds in a profiled
    `make test`). `make test` runs the SQLite one, and the API, store and workflow tests on both
    backends; `make test-long` (CI) runs both."""
    callspec = getattr(item, "callspec", None)
    return "tests/e2e/" in item.nodeid and callspec is not None and callspec.params.get("database_url") == "postgres"


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """End-to-end tests on PostgreSQL are long (above). Longest first: in parallel workers (`make
    test`), a long test started last would run on alone at the end while the other workers wait;
    otherwise collection order is kept."""
    for item in items:
        if _end_to_end_on_postgres(item):
            item.add_marker(pytest.mark.long)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_expected_length)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if POSTGRES is not None:
        POSTGRES.close()
    if _SHARED_DIR:
        shutil.rmtree(_SHARED_DIR[0], ignore_errors=True)


_SHARED_DIR: list[str] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """CI sets PREDICTORX_REQUIRE_POSTGRES: PostgreSQL tests must run, never be skipped.
    The controller of a parallel run migrates the database templates once for all its workers,
    before it starts them (xdist's own sessionstart, which starts them, runs last)."""
    if os.environ.get("PREDICTORX_REQUIRE_POSTGRES") and not POSTGRES_URL:
        raise pytest.UsageError("PREDICTORX_REQUIRE_POSTGRES is set but PREDICTORX_TEST_POSTGRES_URL is not")
    if POSTGRES_URL:
        import psycopg

        try:
            psycopg.connect(POSTGRES_URL, connect_timeout=10).close()
        except psycopg.Error as e:
            raise pytest.UsageError(f"PostgreSQL at PREDICTORX_TEST_POSTGRES_URL is unreachable: {e}") from e
    if session.config.pluginmanager.has_plugin("dsession"):
        _SHARED_DIR.append(tempfile.mkdtemp(prefix="predictorx-test-templates-"))
        build_shared_templates(Path(_SHARED_DIR[0]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """CI sets PREDICTORX_REQUIRE_BROWSER and PREDICTORX_REQUIRE_REAL_CLIS: a browser test skipped
    for want of Chromium, or a real-CLI test for want of its CLI (R-EX-9), fails."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("PREDICTORX_REQUIRE_REAL_CLIS") and "no real CLI" in str(report.longrepr):
        report.outcome = "failed"
        report.longrepr = ("PREDICTORX_REQUIRE_REAL_CLIS is set but a real agent CLI is missing: "
                           f"{report.longrepr} — `make test` installs them with npm ci (needs node and npm)")
        return
    if report.skipped and os.environ.get("PREDICTORX_REQUIRE_BROWSER") and "no Chromium" in str(report.longrepr):
        report.outcome = "failed"
        report.longrepr = "PREDICTORX_REQUIRE_BROWSER is set but no Chromium was found (apt-get install chromium)"
