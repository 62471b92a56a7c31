"""Fixtures for the web UI: the real app served by uvicorn in a thread over a temp SQLite db,
an API client for the owner and for a daemon, and headless Chromium through Playwright.

Chromium is found at $PREDICTORX_CHROMIUM, /usr/bin/chromium, /usr/bin/chromium-browser or on
PATH; browser tests skip (saying "no Chromium") only when none exists.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest
import uvicorn
from playwright.sync_api import expect
from starlette.testclient import TestClient

from predictorx import config
from predictorx.server.app import create_app
from predictorx.server.run import bootstrap
from predictorx.store.db import Database
from predictorx.testing import bound_socket

from databases import sqlite_copy

# Sized for a loaded 2-core machine (seven test runs at once): Playwright's 5 s `expect` default
# and a 5 s page load have timed out there. A wait ends as soon as its condition holds, so a
# generous bound costs nothing when things are quick; only a real failure waits it out.
ACTION_TIMEOUT_MS = 30_000     # clicks, fills, locator waits
NAVIGATION_TIMEOUT_MS = 60_000  # page.goto, reload: a page and its htmx panels under load
EXPECT_TIMEOUT_MS = 30_000     # expect(...).to_... assertions
expect.set_options(timeout=EXPECT_TIMEOUT_MS)

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    for candidate in (os.environ.get("PREDICTORX_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser",
                      shutil.which("chromium")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


# -- the app in-process (TestClient) ---------------------------------------------------------

@pytest.fixture
def web_db(tmp_path: Path, sqlite_template: Path) -> Iterator[Database]:
    db = Database(sqlite_copy(sqlite_template, tmp_path / "web.db"))  # at head (tests/databases.py)
    yield db
    db.dispose()


@pytest.fixture
def token(web_db: Database) -> str:
    return bootstrap(web_db, "http://testserver")


def make_client(web_db: Database, token: str | None, host: str = "testclient") -> TestClient:
    """A TestClient whose requests come from `host` (TestClient's default host is not loopback)."""
    # A browser names the page a change comes from (Origin); the server refuses changes that come
    # with the cookie from anywhere else (R-SEC-7).
    client = TestClient(create_app(web_db, migrate=False), client=(host, 50000), follow_redirects=False,
                        headers={"Origin": "http://testserver"})
    if token:
        client.cookies.set("px_token", token)
    return client


@pytest.fixture
def client(web_db: Database, token: str) -> Iterator[TestClient]:
    with make_client(web_db, token) as c:
        yield c


@pytest.fixture
def anon(web_db: Database, token: str) -> Iterator[TestClient]:
    """No cookie: a browser that has not signed in."""
    with make_client(web_db, None) as c:
        yield c


@pytest.fixture
def local_client(web_db: Database, token: str) -> Iterator[TestClient]:
    """Requests from 127.0.0.1, as a browser on the server's own machine sends them."""
    with make_client(web_db, token, "127.0.0.1") as c:
        yield c


# -- the app served for real (for the browser) -----------------------------------------------

@dataclass
class LiveServer:
    url: str
    token: str
    api: httpx2.Client
    daemon_token: str | None = None
    daemon_id: str | None = None
    extra: dict = field(default_factory=dict)

    def post(self, path: str, json: dict | None = None, token: str | None = None) -> dict:
        r = self.api.post(path, json=json or {}, headers={"Authorization": f"Bearer {token or self.token}"})
        assert r.status_code < 300, r.text
        return r.json() if r.content else {}

    def get(self, path: str) -> dict | list:
        r = self.api.get(path)
        assert r.status_code == 200, r.text
        return r.json()

    def register_local_daemon(self, *, capabilities: tuple[str, ...] = ("local-worktree-v1",),
                              providers: tuple[str, ...] = ("claude",)) -> str:
        """Register this machine's daemon: its id in the server's state dir, as `predictorx up` has it."""
        self.daemon_id = str(uuid.uuid4())
        (config.state_dir() / "daemon_id").write_text(self.daemon_id + "\n")
        out = self.post("/api/daemon/register", {
            "daemon_id": self.daemon_id, "name": "laptop", "hostname": "laptop.local", "version": "0.1.0",
            "capabilities": list(capabilities), "runtimes": [{"provider": p, "version": "1.0"} for p in providers]})
        self.daemon_token = out["token"]
        return self.daemon_id

    def daemon(self, path: str, json: dict | None = None) -> dict:
        return self.post(path, json, token=self.daemon_token)

    def login_link(self) -> str:
        """A single-use sign-in link, as `predictorx web` prints it (the only way in, R-SEC-7)."""
        return self.post("/api/login-link")["url"]

    def sign_in(self, page) -> None:
        """What a person does with the link: open it and press Sign in (issue 29 §10)."""
        page.goto(self.login_link())
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda url: "/login" not in url)


@pytest.fixture
def live(web_db: Database, token: str, monkeypatch) -> Iterator[LiveServer]:
    # The tests play daemons that never beat: under load a test outlasted the 30 s daemon timeout and
    # the sweeper failed its claimed task (an extra inbox item). A test about the sweep sets its own.
    monkeypatch.setenv("PREDICTORX_DAEMON_TIMEOUT", "86400")
    monkeypatch.setenv("PREDICTORX_TASK_LEASE", "86400")
    sock = bound_socket()  # held from here on: no other process can take the port before the server listens
    port = sock.getsockname()[1]
    app = create_app(web_db, migrate=False)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="px-web-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.02)
    url = f"http://127.0.0.1:{port}"
    # A page under 4 workers on a loaded machine took over 10 s (test_browser_quality's axe run, ReadTimeout).
    with httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as api:
        yield LiveServer(url, token, api)
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


# -- the browser ----------------------------------------------------------------------------

# One Chromium per test module, not per session: Playwright's sync API keeps an event loop of its
# own while it runs, and in parallel workers (`make test`) any module may come next on a worker,
# agents-room's MCP tests with their asyncio.run() among them.
@pytest.fixture(scope="module")
def browser():
    executable = find_chromium()
    if executable is None:
        pytest.skip("no Chromium found: install chromium or set PREDICTORX_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        new_context = b.new_context

        def sized_context(**kw):  # every context a test opens gets the timeouts
            context = new_context(**kw)
            context.set_default_timeout(ACTION_TIMEOUT_MS)
            context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
            return context
        b.new_context = sized_context
        yield b
        b.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


SCREENSHOTS = Path(os.environ.get("PREDICTORX_SCREENSHOTS") or Path(tempfile.gettempdir()) / "predictorx-web-failures")


@pytest.fixture
def page(browser, live: LiveServer, request):
    """A fresh browser context, signed in through the login link `predictorx up` prints.
    A test that fails leaves a full-page screenshot in $PREDICTORX_SCREENSHOTS (a temp dir)."""
    context = browser.new_context(viewport={"width": 1360, "height": 900}, base_url=live.url)
    p = context.new_page()
    live.sign_in(p)
    yield p
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = SCREENSHOTS / f"{request.node.name[:120]}.png"
        try:
            p.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the failure: {shot}")
        except Exception:  # noqa: BLE001 — a screenshot must never hide the test's own failure
            pass
    context.close()


# -- accessibility (axe-core from the npm registry, tests/web/package.json) ----------------------

AXE_JS = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture
def axe():
    """axe(page) → the page's serious and critical axe-core violations, one line each."""
    return axe_violations


def axe_violations(page, impacts: tuple[str, ...] = ("serious", "critical")) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now, one line each."""
    if not AXE_JS.exists():
        pytest.fail(f"axe-core is not installed at {AXE_JS}: run `make test` (it runs npm ci in tests/web)")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                       nodes: v.nodes.slice(0, 8).map(n => n.target.join(' '))}));
    }""")
    return [f"{v['impact']}: {v['id']} — {v['help']} at {', '.join(v['nodes'])}"
            for v in result if v["impact"] in impacts]


# -- a git repository with an agent's branch (the diff view) -------------------------------------

def _git(cwd: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          timeout=30).stdout


@pytest.fixture
def branch_repo(tmp_path: Path) -> tuple[Path, str, str]:
    """(repo, base commit, branch): a Python file edited, a file added, one deleted, on
    `agent/claude/1234abcd`; main is checked out again."""
    repo = tmp_path / "shop"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "T")
    (repo / "app.py").write_text("def total(items):\n    return sum(items)\n\n\nprint(total([1, 2]))\n")
    (repo / "notes.txt").write_text("old notes\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    branch = "agent/claude/1234abcd"
    _git(repo, "checkout", "-q", "-b", branch)
    (repo / "app.py").write_text("def total(items, tax=0):\n    \"\"\"Sum with tax.\"\"\"\n"
                                 "    return sum(items) * (1 + tax)\n\n\nprint(total([1, 2]))\n")
    (repo / "notes.txt").unlink()
    (repo / "README.md").write_text("# Shop\n\nNow with tax.\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "agent work")
    _git(repo, "checkout", "-q", "main")
    return repo, base, branch
