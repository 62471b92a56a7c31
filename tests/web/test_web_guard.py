"""Cross-site forgery refused for every state change, frames and sniffing forbidden (issue 8
finding 12, R-SEC-7). HTTP only: the browser's own behaviour is covered by the Playwright tests,
which pass through the same guard."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from predictorx.server.app import create_app

EVIL = "http://127.0.0.1:9999"  # another port of the same host: the same "site" to SameSite


@pytest.fixture
def browser_like(web_db, token):
    """A client holding the session cookie and sending no Origin of its own."""
    with TestClient(create_app(web_db, migrate=False), follow_redirects=False) as c:
        c.cookies.set("px_token", token)
        yield c


def _issues(client, token):
    return client.get("/api/issues", headers={"Authorization": f"Bearer {token}"}).json()


@pytest.mark.parametrize("headers", [
    {"Origin": EVIL},
    {"Origin": "null"},
    {"Origin": "http://testserver.evil.example"},
    {"Sec-Fetch-Site": "cross-site"},
    {},  # neither Origin nor Referer: a cookie request cannot prove where it came from
    {"Referer": f"{EVIL}/attack.html"},
])
def test_finding_12_cross_origin_post_with_the_cookie_is_refused(browser_like, token, headers):
    r = browser_like.post("/api/issues", json={"title": "forged"}, headers=headers)
    assert r.status_code == 403, r.text
    r = browser_like.post("/issues", data={"title": "forged"}, headers=headers)  # the web form
    assert r.status_code == 403
    r = browser_like.post("/logout", headers=headers)
    assert r.status_code == 403
    assert _issues(browser_like, token) == []


def test_finding_12_same_origin_posts_and_bearer_clients_pass(browser_like, token, monkeypatch, web_db):
    r = browser_like.post("/api/issues", json={"title": "mine"}, headers={"Origin": "http://testserver"})
    assert r.status_code == 201, r.text
    r = browser_like.post("/api/issues", json={"title": "mine too"}, headers={"Referer": "http://testserver/issues"})
    assert r.status_code == 201, r.text
    with TestClient(create_app(web_db, migrate=False)) as cli:  # the CLI: a bearer token, no browser headers
        r = cli.post("/api/issues", json={"title": "from cli"}, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 201
    monkeypatch.setenv("PREDICTORX_ALLOWED_ORIGINS", "https://px.example.com")
    with TestClient(create_app(web_db, migrate=False)) as proxied:
        proxied.cookies.set("px_token", token)
        assert proxied.post("/api/issues", json={"title": "via proxy"},
                            headers={"Origin": "https://px.example.com"}).status_code == 201
        assert proxied.post("/api/issues", json={"title": "x"}, headers={"Origin": EVIL}).status_code == 403
    assert len(_issues(browser_like, token)) == 4


def test_finding_12_every_answer_forbids_framing_and_sniffing(browser_like):
    for r in (browser_like.get("/"), browser_like.get("/login"), browser_like.get("/api/health"),
              browser_like.get("/no/such/page"), browser_like.post("/api/issues", json={}, headers={"Origin": EVIL})):
        assert r.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "same-origin"


def test_behind_nginx_the_browser_address_keeps_its_port(browser_like, token):
    """The shipped nginx config passes Host as the browser sent it; with `$host` (port dropped) a
    page served on :8080 could not post to itself."""
    from predictorx.server.nginx import render

    assert "proxy_set_header Host $http_host;" in render(["127.0.0.1:8484"])
    ok = browser_like.post("/api/issues", json={"title": "via lb"},
                           headers={"Origin": "http://lb.example:8080", "Host": "lb.example:8080"})
    assert ok.status_code == 201, ok.text
    dropped = browser_like.post("/api/issues", json={"title": "x"},
                                headers={"Origin": "http://lb.example:8080", "Host": "lb.example"})
    assert dropped.status_code == 403
