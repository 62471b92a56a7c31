"""The command line and OpenID Connect (issue 28 §1), against the real provider: the operator's
`predictorx server oidc add|list|map|remove` (the client secret never an argument, never shown,
sealed in the database), and `predictorx login --sso` by the device grant and by the loopback
redirect, each ending with a working personal token in the CLI's config."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import httpx2
import pytest
import uvicorn

from predictorx import config
from predictorx.server.app import create_app
from predictorx.server.run import bootstrap
from predictorx.store.db import Database
from predictorx.testing import free_port

from databases import sqlite_copy

from .standin import OidcStandin

PX = [sys.executable, "-m", "predictorx"]
HTTP_TIMEOUT = 60  # a loaded 2-core machine (4 workers) took over the 5 s default to answer a poll


@pytest.fixture
def db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sqlite_template: Path) -> str:
    """A database of this test's own at the migrations' head (a copy of the template, not migrated again)."""
    url = sqlite_copy(sqlite_template, tmp_path / "cli.db")
    monkeypatch.setenv("PREDICTORX_DATABASE_URL", url)
    return url


@pytest.fixture
def server(db_url: str) -> Iterator[str]:
    db = Database(db_url)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    bootstrap(db, url)
    uv = uvicorn.Server(uvicorn.Config(create_app(db, migrate=False), host="127.0.0.1", port=port,
                                       log_level="warning", access_log=False))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield url
    uv.should_exit = True
    thread.join(timeout=10)
    db.dispose()


def px(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*PX, *args], input=stdin, capture_output=True, text=True, timeout=120, env=os.environ)


def add_provider(provider: OidcStandin, server: str) -> dict:
    client = provider.register(server)
    out = px("server", "oidc", "add", "corp", "--issuer", provider.issuer, "--client-id", client["client_id"],
             "--display-name", "Corp SSO", "--scopes", "openid email profile groups", "--secret-stdin",
             stdin=client["client_secret"] + "\n")
    assert out.returncode == 0, out.stderr
    return client


def test_operator_adds_lists_maps_and_removes_a_provider(oidc_provider, server, db_url, tmp_path):
    client = add_provider(oidc_provider, server)
    listed = px("server", "oidc", "list")
    assert listed.returncode == 0 and "corp" in listed.stdout and "secret set" in listed.stdout
    assert client["client_secret"] not in listed.stdout + listed.stderr
    db_file = Path(db_url.removeprefix("sqlite:///"))
    raw = b"".join(p.read_bytes() for p in db_file.parent.glob(db_file.name + "*"))
    assert client["client_secret"].encode() not in raw  # sealed at rest (AES-GCM), never in plain text
    mapped = px("server", "oidc", "map", "corp", "--value", "eng", "--workspace", "default", "--role", "admin")
    assert mapped.returncode == 0, mapped.stderr
    assert "groups = 'eng' → admin" in px("server", "oidc", "list").stdout
    bad = px("server", "oidc", "map", "corp", "--value", "eng", "--workspace", "nowhere", "--role", "admin")
    assert bad.returncode != 0 and "no workspace 'nowhere'" in bad.stderr and "Traceback" not in bad.stderr
    twice = px("server", "oidc", "add", "corp", "--issuer", oidc_provider.issuer, "--client-id", "x", "--public-client")
    assert twice.returncode != 0 and "already" in twice.stderr
    nowhere = px("server", "oidc", "add", "other", "--issuer", f"http://127.0.0.1:{free_port()}", "--client-id", "x",
                 "--public-client")
    assert nowhere.returncode != 0 and "did not answer" in nowhere.stderr and "Traceback" not in nowhere.stderr
    assert "other" not in px("server", "oidc", "list").stdout  # nothing added
    assert px("server", "oidc", "remove", "corp").returncode == 0
    assert "no OpenID providers" in px("server", "oidc", "list").stdout
    assert httpx2.get(f"{server}/api/sso/providers", timeout=HTTP_TIMEOUT).json() == []


def _sign_in_line(proc: subprocess.Popen) -> str:
    """The address the CLI asks the person to open (its stderr)."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        found = re.search(r"open (\S+)", line)
        if found:
            return found.group(1)
    raise AssertionError(f"the CLI printed no address; it exited {proc.wait()}: {''.join(seen)}")


def _login(server: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([*PX, "login", "--sso", "--server-url", server, "--no-browser", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ)


def _signed_in_as(server: str) -> str:
    token = config.read_config()["token"]
    me = httpx2.get(f"{server}/api/me", headers={"Authorization": f"Bearer {token}"}, timeout=HTTP_TIMEOUT)
    assert me.status_code == 200, me.text
    return me.json()["user"]["name"]


def test_login_sso_by_the_device_grant(oidc_provider, server):
    add_provider(oidc_provider, server)
    proc = _login(server)
    try:
        where = _sign_in_line(proc)
        assert where.startswith(f"{oidc_provider.issuer}/device")  # the provider's own page
        oidc_provider.follow(where, "alice")  # the person approves it in a browser
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Logged in" in out
    assert _signed_in_as(server) == "Alice Admin"


def test_login_sso_by_the_loopback_redirect(oidc_provider, server):
    add_provider(oidc_provider, server)
    proc = _login(server, "--loopback")
    try:
        where = _sign_in_line(proc)
        assert where.startswith(f"{server}/auth/oidc/corp/cli?redirect=http%3A%2F%2F127.0.0.1%3A")
        landed = oidc_provider.follow(where, "bob")  # the browser, through the provider, back to the CLI
        assert landed.startswith("http://127.0.0.1:") and "/callback?code=" in landed
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert _signed_in_as(server) == "Bob Builder"


def test_a_device_handle_signs_in_once(oidc_provider, server):
    add_provider(oidc_provider, server)
    started = httpx2.post(f"{server}/api/sso/device", json={"provider": "corp"}, timeout=HTTP_TIMEOUT).json()
    assert "device_code" not in started  # the device code stays on the server
    pending = httpx2.post(f"{server}/api/sso/device/poll", json={"handle": started["handle"]}, timeout=HTTP_TIMEOUT)
    assert pending.json()["status"] == "pending"
    oidc_provider.follow(started["verification_uri_complete"], "alice")
    done = httpx2.post(f"{server}/api/sso/device/poll", json={"handle": started["handle"]}, timeout=HTTP_TIMEOUT)
    assert done.status_code == 200 and done.json()["token"].startswith("pxu_")
    again = httpx2.post(f"{server}/api/sso/device/poll", json={"handle": started["handle"]}, timeout=HTTP_TIMEOUT)
    assert again.status_code == 401 and "used already" in again.json()["detail"]
    unknown = httpx2.post(f"{server}/api/sso/device/poll", json={"handle": "x" * 43}, timeout=HTTP_TIMEOUT)
    assert unknown.status_code == 401
