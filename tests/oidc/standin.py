"""A real OpenID provider for the tests: oidc-provider (npm, pinned in tests/oidc/package-lock.json,
installed by `make test`) run with tests/oidc/provider.mjs on a loopback port.

`oidc_provider` (session-wide: node starts once) gives an `OidcStandin`: its issuer, the people
(`set_users`: written to the JSON file the provider reads at each sign-in), `register` (a client of
this test's own, by dynamic registration), `rotate` (a new signing key) and `follow` (a person
signing in at the provider through plain HTTP: its development login form, any password).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator
from urllib.parse import urljoin

import httpx2
import pytest

from predictorx.testing import free_port

HERE = Path(__file__).parent
NODE_MODULES = HERE / "node_modules" / "oidc-provider"

PEOPLE = {
    "alice": {"name": "Alice Admin", "email": "alice@example.com", "email_verified": True, "groups": ["eng", "leads"]},
    "bob": {"name": "Bob Builder", "email": "bob@example.com", "email_verified": False, "groups": ["eng"]},
}


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

    def follow(self, url: str, login: str, *, stop_at: str | None = None, client: httpx2.Client | None = None) -> str:
        """A browser: follow `url` through redirects, filling the provider's forms (its development
        login form as `login`, any password; the device flow's code confirmation) and submitting
        them. Stops at the first redirect to a URL starting with `stop_at` (answered, not followed)
        or, without `stop_at`, at the first page with no form; the URL it stopped at."""
        own = client or httpx2.Client(timeout=30, follow_redirects=False)
        try:
            method, data = "GET", None
            for _ in range(30):
                if stop_at and url.startswith(stop_at):
                    return url
                r = own.request(method, url, data=data)
                method, data = "GET", None
                if r.status_code in (302, 303):
                    url = urljoin(url, r.headers["location"])
                    continue
                assert r.status_code == 200, f"{url} answered {r.status_code}: {r.text[:500]}"
                form = _Form.of(r.text)
                if form.action is None:
                    assert stop_at is None, f"the flow stopped at {url} before {stop_at}: {r.text[:500]}"
                    return url
                fields = {**form.fields, **{k: v for k, v in (("login", login), ("password", "any"))
                                            if k in form.fields}}
                fields.pop("abort", None)
                method, data, url = "POST", fields, urljoin(url, form.action)
            raise AssertionError("the sign-in never came back")
        finally:
            if client is None:
                own.close()


class _Form(HTMLParser):
    """The first form of a page: its action and its inputs' names and values."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.form_id: str | None = None
        self.fields: dict[str, str] = {}
        self._in = False

    @classmethod
    def of(cls, page: str) -> "_Form":
        parser = cls()
        parser.feed(page)
        return parser

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "form" and self.action is None:
            self.action, self.form_id, self._in = a.get("action") or "", a.get("id"), True
        elif tag == "input" and a.get("name") and (self._in or (self.form_id and a.get("form") == self.form_id)):
            self.fields[a["name"]] = a.get("value") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in = False


def start_provider(tmp: Path) -> OidcStandin:
    node = shutil.which("node")
    if node is None or not NODE_MODULES.exists():
        pytest.fail("oidc-provider is not installed in tests/oidc/node_modules: run `make test` "
                    "(it runs npm ci there), and install node")
    port = free_port()
    users = tmp / "users.json"
    users.write_text(json.dumps(PEOPLE))
    log = (tmp / "provider.log").open("w")
    process = subprocess.Popen([node, str(HERE / "provider.mjs")], cwd=HERE, stdout=log, stderr=subprocess.STDOUT,
                               env={"PATH": "/usr/bin:/bin", "OIDC_PORT": str(port), "OIDC_USERS": str(users),
                                    "NODE_ENV": "test"})
    issuer = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    with httpx2.Client(timeout=5) as probe:  # one for every poll: a new client costs 20 ms of CPU (its SSL context)
        while True:
            try:
                if probe.get(f"{issuer}/.well-known/openid-configuration").status_code == 200:
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
