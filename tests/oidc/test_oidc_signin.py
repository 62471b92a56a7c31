"""OpenID Connect sign-in against a real provider (oidc-provider on loopback; issue 28 §1): the
authorization code flow with PKCE, state and nonce through the server's own pages (TestClient,
the provider reached over real HTTP), first sign-in creating or linking the account, refused
replays and foreign browsers, group → role mapping granted and taken back, and sign-out ending the
provider's session too."""

from __future__ import annotations

from typing import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from predictorx.server.app import create_app
from predictorx.server.run import bootstrap
from predictorx.service import members, oidc_providers
from predictorx.store.db import Database
from predictorx.store.oidc_schema import OidcGrant, OidcIdentity
from predictorx.store.schema import AuditEvent, Member, User, Workspace

from .standin import PEOPLE, OidcStandin

BASE = "http://testserver"
CALLBACK = f"{BASE}/auth/oidc/callback"


@pytest.fixture
def oidc_db(database_url: str) -> Iterator[Database]:
    """SQLite, and PostgreSQL where PREDICTORX_TEST_POSTGRES_URL is set (tests/conftest.py)."""
    db = Database(database_url)
    db.migrate()
    yield db
    db.dispose()


@pytest.fixture
def owner_token(oidc_db: Database) -> str:
    token = bootstrap(oidc_db, BASE)
    assert token
    return token


@pytest.fixture
def provider(oidc_db: Database, oidc_provider: OidcStandin, owner_token: str) -> OidcStandin:
    client = oidc_provider.register(BASE)
    with oidc_db.write() as s:
        oidc_providers.add(s, name="corp", display_name="Corp SSO", issuer=oidc_provider.issuer,
                           client_id=client["client_id"], client_secret=client["client_secret"],
                           scopes="openid email profile groups")
    return oidc_provider


def browser(db: Database) -> TestClient:
    return TestClient(create_app(db, migrate=False), base_url=BASE, follow_redirects=False,
                      headers={"Origin": BASE})


def sign_in(web: TestClient, provider: OidcStandin, login: str):
    """Follow "Sign in with Corp SSO", sign in at the provider, come back: the callback's answer."""
    start = web.get("/auth/oidc/corp")
    assert start.status_code == 303, start.text
    back = provider.follow(start.headers["location"], login, stop_at=CALLBACK)
    return web.get(back.removeprefix(BASE)), back


def me(web: TestClient) -> dict:
    r = web.get("/api/me")
    assert r.status_code == 200, r.text
    return r.json()


def test_sign_in_page_offers_the_provider_and_signs_in_a_new_person(oidc_db, provider):
    with browser(oidc_db) as web:
        page = web.get("/login")
        assert "Sign in with Corp SSO" in page.text and 'href="/auth/oidc/corp"' in page.text
        start = web.get("/auth/oidc/corp")
        query = parse_qs(urlsplit(start.headers["location"]).query)
        assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
        assert query["state"][0] and query["nonce"][0] and query["scope"] == ["openid email profile groups"]
        answer, _ = sign_in(web, provider, "alice")
        assert answer.status_code == 303 and answer.headers["location"] == "/", answer.text
        assert me(web)["user"]["name"] == PEOPLE["alice"]["name"]
    with oidc_db.read() as s:
        user = s.scalar(select(User).where(User.name == "Alice Admin"))
        assert user.email == "alice@example.com"  # verified: kept
        assert s.scalar(select(OidcIdentity.subject).where(OidcIdentity.user_id == user.id)) == "alice"


def test_a_replayed_state_is_refused(oidc_db, provider):
    with browser(oidc_db) as web:
        answer, back = sign_in(web, provider, "alice")
        assert answer.status_code == 303
        again = web.get(back.removeprefix(BASE))
        assert again.status_code == 401 and "used already" in again.text


def test_a_callback_in_another_browser_is_refused(oidc_db, provider):
    with browser(oidc_db) as victim, browser(oidc_db) as attacker:
        start = attacker.get("/auth/oidc/corp")
        back = provider.follow(start.headers["location"], "bob", stop_at=CALLBACK)
        answer = victim.get(back.removeprefix(BASE))  # the attacker's callback link, opened by the victim
        assert answer.status_code == 401 and "another browser" in answer.text
        assert "px_token" not in answer.cookies


def test_a_verified_email_links_an_unverified_one_never_does(oidc_db, provider, owner_token):
    with oidc_db.write() as s:
        ws = s.scalar(select(Workspace))
        owner = s.scalar(select(User))
        alice, _ = members.add_member(s, ws.id, owner.id, name="alice (by hand)", email="alice@example.com", role="member")
        bob, _ = members.add_member(s, ws.id, owner.id, name="bob (by hand)", email="bob@example.com", role="admin")
        alice_id, bob_id = alice.id, bob.id
    with browser(oidc_db) as web:
        assert sign_in(web, provider, "alice")[0].status_code == 303
        assert me(web)["user"]["id"] == alice_id  # email_verified: the existing account
    with browser(oidc_db) as web:
        assert sign_in(web, provider, "bob")[0].status_code == 303
        signed_in = me(web)
        assert signed_in["user"]["id"] != bob_id  # unverified: never bob's account
        assert signed_in["workspace_ids"] == []  # … nor any of his memberships
    with oidc_db.read() as s:
        new_bob = s.get(User, signed_in["user"]["id"])
        assert new_bob.email is None  # an unverified address is not kept either


def test_group_mapping_grants_a_role_and_takes_it_back(oidc_db, provider):
    with oidc_db.write() as s:
        ws_id = s.scalar(select(Workspace.id))
        oidc_providers.map_group(s, "corp", value="leads", workspace="default", role="admin")
        oidc_providers.map_group(s, "corp", value="eng", workspace="default", role="member")
    with browser(oidc_db) as web:
        sign_in(web, provider, "alice")  # groups eng + leads: the higher role
        alice = me(web)
        assert alice["workspace_ids"] == [ws_id]
        assert web.get("/api/workspaces/default/members").status_code == 200
    with oidc_db.read() as s:
        assert s.get(Member, (ws_id, alice["user"]["id"])).role == "admin"

    provider.set_users({**PEOPLE, "alice": {**PEOPLE["alice"], "groups": ["eng"]}})  # left "leads"
    with browser(oidc_db) as web:
        sign_in(web, provider, "alice")
    with oidc_db.read() as s:
        assert s.get(Member, (ws_id, alice["user"]["id"])).role == "member"

    provider.set_users({**PEOPLE, "alice": {**PEOPLE["alice"], "groups": []}})  # left every group
    with browser(oidc_db) as web:
        sign_in(web, provider, "alice")
        assert me(web)["workspace_ids"] == []
        assert web.get("/").status_code in (401, 404)
    with oidc_db.read() as s:
        assert s.get(Member, (ws_id, alice["user"]["id"])) is None
        assert s.get(OidcGrant, (alice["user"]["id"], ws_id)) is None


def test_mapping_never_lowers_a_role_given_by_hand(oidc_db, provider):
    with oidc_db.write() as s:
        ws = s.scalar(select(Workspace))
        owner = s.scalar(select(User))
        alice, _ = members.add_member(s, ws.id, owner.id, name="alice", email="alice@example.com", role="admin")
        alice_id, ws_id = alice.id, ws.id
        oidc_providers.map_group(s, "corp", value="eng", workspace="default", role="member")
    provider.set_users({**PEOPLE, "alice": {**PEOPLE["alice"], "groups": []}})
    with browser(oidc_db) as web:
        sign_in(web, provider, "alice")
    with oidc_db.read() as s:
        assert s.get(Member, (ws_id, alice_id)).role == "admin"


def test_sign_out_revokes_the_session_and_ends_the_providers(oidc_db, provider):
    with browser(oidc_db) as web:
        sign_in(web, provider, "alice")
        cookie = web.cookies.get("px_token")
        out = web.post("/logout")
        assert out.status_code == 200 and "signed out here" in out.text
        end = out.headers["refresh"].split("url=", 1)[1]
        assert end.startswith(f"{provider.issuer}/session/end?")
        query = parse_qs(urlsplit(end).query)
        assert query["post_logout_redirect_uri"] == [f"{BASE}/login"]
        web.cookies.clear()
        assert web.get("/api/me", headers={"Authorization": f"Bearer {cookie}"}).status_code == 401


def test_an_unknown_provider_and_a_missing_code_are_sentences(oidc_db, provider):
    with browser(oidc_db) as web:
        r = web.get("/auth/oidc/nobody")
        assert r.status_code == 404 and "No OpenID provider named" in r.text  # (the browser's 404: a sentence)
        r = web.get("/auth/oidc/callback?state=x")
        assert r.status_code == 400 and "no code or state" in r.text
        r = web.get("/auth/oidc/callback?error=access_denied&error_description=End-User+aborted")
        assert r.status_code == 401 and "access_denied" in r.text


def test_expired_sign_ins_are_forgotten(oidc_db, provider):
    from datetime import timedelta

    from predictorx.store.oidc_schema import OidcLogin
    from predictorx.store.schema import utcnow

    with browser(oidc_db) as web:
        stale = web.get("/auth/oidc/corp")
        with oidc_db.write() as s:
            for row in s.scalars(select(OidcLogin)):
                row.expires_at = utcnow() - timedelta(seconds=1)
        back = provider.follow(stale.headers["location"], "alice", stop_at=CALLBACK)
        web.get("/auth/oidc/corp")  # a new sign-in clears the expired ones …
        late = web.get(back.removeprefix(BASE))
        assert late.status_code == 401 and "not one this server started" in late.text  # … so that one is unknown
    with oidc_db.read() as s:
        assert len(list(s.scalars(select(OidcLogin)))) == 1


def test_a_provider_that_does_not_answer_is_a_sentence(oidc_db, owner_token):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    with oidc_db.write() as s:
        oidc_providers.add(s, name="down", issuer=f"http://127.0.0.1:{closed}", client_id="x", client_secret=None)
    with browser(oidc_db) as web:
        r = web.get("/auth/oidc/down")
        assert r.status_code == 502 and "did not answer" in r.text and "Traceback" not in r.text


def test_each_oidc_sign_in_and_mapping_change_is_audited_once(oidc_db, provider):
    """issue 28 §4: an OpenID sign-in is one `sign_in` (method oidc, its provider, the address);
    each membership the group mapping changes is one member event with no actor; a rule mapped is
    one `oidc.configure` in its workspace."""
    def events() -> list[AuditEvent]:
        with oidc_db.read() as s:
            return list(s.scalars(select(AuditEvent).order_by(AuditEvent.id)))

    before = len(events())
    with oidc_db.write() as s:
        oidc_providers.map_group(s, "corp", value="leads", workspace="default", role="admin")
    with browser(oidc_db) as web:
        sign_in(web, provider, "alice")
        alice = me(web)["user"]["id"]
    new = events()[before:]
    assert [(e.action, e.actor_id) for e in new] == [("oidc.configure", None), ("sign_in", alice),
                                                     ("member.add", None)]
    assert new[0].detail["change"] == "map" and new[0].workspace_id is not None
    assert new[1].detail == {"method": "oidc", "provider": "corp"} and new[1].target == "web" and new[1].address
    assert new[2].detail["to"] == "admin" and new[2].target == f"user:{alice}"
