"""A real OpenID provider for the tests: oidc-provider (npm, pinned in tests/oidc/package-lock.json,
installed by `make test`) run with tests/oidc/provider.mjs on a loopback port.

`oidc_provider` (session-wide: node starts once) gives an `OidcStandin`: its issuer, the people
(`set_users`: written to the JSON file the provider reads at each sign-in), `register` (a client of
this test's own, by dynamic registration), `rotate` (a new signing key) and `follow` (a person
signing in at the provider through plain HTTP: its development login form, any password).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator
from urllib.parse import urljoin

import httpx2
import pytest

HERE = Path(__file__).parent
NODE_MODULES = HERE / "node_modules" / "oidc-provider"

PEOPLE = {
    "alice": {"name": "Alice Admin", "email": "alice@example.com", "email_verified": True, "groups": ["eng", "leads"]},
    "bob": {"name": "Bob Builder", "email": "bob@example.com", "email_verified": False, "groups": ["eng"]},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class OidcStandin:
    issuer: str
    users_file: Path
    process: subprocess.Popen
    clients: list[dict] = field(default_factory=list)

    def set_users(self, users: dict) -> None:
        tmp = self.users_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(users))
        tmp.replace(self.users_file)

    def register(self, base_url: str, *, grant_types: tuple[str, ...] = (
            "authorization_code", "urn:ietf:params:oauth:grant-type:device_code")) -> dict:
        """A client of its own for a server at `base_url` (RFC 7591): client_id and client_secret."""
        r = httpx2.post(f"{self.issuer}/reg", json={
            "redirect_uris": [f"{base_url}/auth/oidc/callback"], "response_types": ["code"],
            "grant_types": list(grant_types), "post_logout_redirect_uris": [f"{base_url}/login"],
            "token_endpoint_auth_method": "client_secret_basic"}, timeout=30)
        assert r.status_code == 201, r.text
        self.clients.append(r.json())
        return r.json()

    def rotate(self) -> list[str]:
        r = httpx2.post(f"{self.issuer}/__test/rotate", timeout=30)
        assert r.status_code == 200, r.text
        return r.json()["kids"]

    def follow(self, url: str, login: str, *, stop_at: str, client: httpx2.Client | None = None) -> str:
        """A browser at the provider: follow `url`, sign in as `login` on the development form,
        follow on; the first redirect to a URL starting with `stop_at` is answered (not followed)."""
        own = client or httpx2.Client(timeout=30, follow_redirects=False)
        try:
            for _ in range(20):
                if url.startswith(stop_at):
                    return url
                r = own.get(url)
                if r.status_code in (302, 303):
                    url = urljoin(url, r.headers["location"])
                    continue
                form = re.search(r'<form[^>]*action="([^"]+)"', r.text)
                assert r.status_code == 200 and form, f"the provider showed no form at {url}: {r.status_code} {r.text[:500]}"
                fields = {"prompt": "login", "login": login, "password": "any"} if 'name="login"' in r.text \
                    else {"prompt": "consent"}
                r = own.post(urljoin(url, form.group(1)), data=fields)
                assert r.status_code in (302, 303), f"the provider refused the form: {r.status_code} {r.text[:500]}"
                url = urljoin(url, r.headers["location"])
            raise AssertionError("the provider's sign-in never came back")
        finally:
            if client is None:
                own.close()


def start_provider(tmp: Path) -> OidcStandin:
    node = shutil.which("node")
    if node is None or not NODE_MODULES.exists():
        pytest.fail("oidc-provider is not installed in tests/oidc/node_modules: run `make test` "
                    "(it runs npm ci there), and install node")
    port = _free_port()
    users = tmp / "users.json"
    users.write_text(json.dumps(PEOPLE))
    log = (tmp / "provider.log").open("w")
    process = subprocess.Popen([node, str(HERE / "provider.mjs")], cwd=HERE, stdout=log, stderr=subprocess.STDOUT,
                               env={"PATH": "/usr/bin:/bin", "OIDC_PORT": str(port), "OIDC_USERS": str(users),
                                    "NODE_ENV": "test"})
    issuer = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx2.get(f"{issuer}/.well-known/openid-configuration", timeout=5).status_code == 200:
                break
        except httpx2.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"oidc-provider did not start: {(tmp / 'provider.log').read_text()[-2000:]}")
        time.sleep(0.1)
    return OidcStandin(issuer, users, process)


@pytest.fixture(scope="session")
def oidc_session_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcStandin]:
    standin = start_provider(tmp_path_factory.mktemp("oidc-provider"))
    yield standin
    standin.process.terminate()
    try:
        standin.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        standin.process.kill()


@pytest.fixture
def oidc_provider(oidc_session_provider: OidcStandin) -> Iterator[OidcStandin]:
    """The provider with its two people as they start (a test may change them)."""
    oidc_session_provider.set_users(PEOPLE)
    yield oidc_session_provider
