"""Cached principals never outlive a revocation (server/principals.py, R-SEC-1, R-SEC-5): the
process that revokes refuses the token on the next request, another server process as soon as
PostgreSQL delivers the notice — not when the cache entry would have expired."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from starlette.testclient import TestClient

from predictorx.server.app import create_app
from predictorx.server.principals import PrincipalCache
from predictorx.service.auth import Principal
from predictorx.store.db import Database


def _me(api, token):
    return api.as_(token).get("/api/me").status_code


def test_a_revoked_token_is_refused_by_the_next_request(api, app, listening):
    app.state.px.principals.ttl = 3600  # only the revocation itself may make it forget
    made = api.post("/api/tokens", json={"name": "laptop"}).json()
    assert _me(api, made["token"]) == 200 and _me(api, made["token"]) == 200  # the second from the cache
    assert len(app.state.px.principals) >= 1
    assert api.delete(f"/api/tokens/{made['id']}").status_code == 204
    assert _me(api, made["token"]) == 401


def test_a_superseded_daemon_token_is_refused_at_once(api, app):
    """Registering a daemon again with the owner's token revokes its previous daemon token."""
    app.state.px.principals.ttl = 3600
    did = str(uuid.uuid4())
    body = {"daemon_id": did, "name": "box", "runtimes": [{"provider": "command", "version": "1"}]}
    old = api.post("/api/daemon/register", json=body).json()["token"]
    assert api.as_(old).post("/api/daemon/heartbeat", json={"task_ids": []}).status_code == 200  # cached now
    new = api.post("/api/daemon/register", json=body).json()["token"]
    assert api.as_(old).post("/api/daemon/heartbeat", json={"task_ids": []}).status_code == 401
    assert api.as_(new).post("/api/daemon/heartbeat", json={"task_ids": []}).status_code == 200


def test_a_removed_member_loses_the_workspace_at_once(api, app):
    app.state.px.principals.ttl = 3600
    added = api.post("/api/workspaces/default/members", json={"name": "Ann", "role": "admin"}).json()
    ann = api.as_(added["token"])
    assert ann.get("/api/workspaces/default/members").status_code == 200
    assert api.delete(f"/api/workspaces/default/members/{added['user_id']}").status_code == 204
    assert ann.get("/api/workspaces/default/members").status_code in (401, 403, 404)


def test_a_lookup_that_raced_a_revocation_stores_nothing():
    cache = PrincipalCache(ttl=60)
    key = cache.key("pxu_raced")
    generation = cache.generation  # the lookup reads the token ...
    cache.forget()  # ... while a revocation commits
    cache.put(key, Principal("user", "t1", user_id="u1"), generation)
    assert cache.get(key) is None
    cache.put(key, Principal("user", "t1", user_id="u1"), cache.generation)
    assert cache.get(key) is not None
    cache.put(cache.key("pxt_task"), Principal("task", "t2", task_id="x"), cache.generation)
    assert cache.get(cache.key("pxt_task")) is None  # a task token dies with its task: never kept


def test_another_server_process_forgets_when_postgres_tells_it(api, app, database_url):
    """Two server processes on one PostgreSQL (here two apps, each with its own LISTEN): a token
    revoked through one is refused by the other well before its cache entry would expire."""
    if not database_url.startswith("postgresql"):
        pytest.skip("one SQLite database is one server process")
    other_db = Database(database_url)
    other = create_app(other_db, migrate=False, web=False)
    other.state.px.principals.ttl = 3600
    made = api.post("/api/tokens", json={"name": "ci"}).json()
    headers = {"Authorization": f"Bearer {made['token']}"}
    listening = threading.Event()  # LISTEN (re)starting calls every notice handler
    other.state.px.hub.on_notice("test-listening", listening.set)
    try:
        with TestClient(other) as replica:
            assert listening.wait(30), "the other process never started to LISTEN"
            assert replica.get("/api/me", headers=headers).status_code == 200
            assert len(other.state.px.principals) == 1
            assert api.delete(f"/api/tokens/{made['id']}").status_code == 204
            t0 = time.monotonic()
            while replica.get("/api/me", headers=headers).status_code == 200:
                assert time.monotonic() - t0 < 2.0, "the other process still honours a revoked token"
                time.sleep(0.01)
    finally:
        other_db.dispose()


def test_a_daemon_request_in_flight_when_its_owner_is_removed_changes_nothing(api, app):
    """Finding 4's race (seen in CI): a heartbeat authenticated before the removal committed and
    written after it put the removed member's daemon back online; a claim so could take the tasks
    the removal had just put back. The write checks the token again inside its transaction."""
    from predictorx.server.deps import Caller
    from predictorx.server.models import Claim, Heartbeat
    from predictorx.server.routes import daemons as routes
    from predictorx.service.auth import Unauthorized, authenticate

    from tests.api.test_claim_scale import _daemon
    from tests.api.test_security_authz import _add, _ws

    ws = _ws(api)
    bob_id, bob = _add(api, "Bob")
    daemon_id, daemon = _daemon(bob)
    bob.post("/api/agents", json={"name": "bob-bot", "provider": "command", "command": ["true"]})
    issue = bob.post("/api/issues", json={"title": "Bob's", "assignee": "bob-bot"}).json()
    state = app.state.px
    with state.read() as s:  # what the requests in flight authenticated, before the removal
        in_flight = Caller(authenticate(s, daemon.token), ws)
    assert api.delete(f"/api/workspaces/{ws}/members/{bob_id}").status_code == 204

    with pytest.raises(Unauthorized):
        routes.heartbeat(Heartbeat(task_ids=[]), in_flight, state)
    with pytest.raises(Unauthorized):
        routes.claim(Claim(limit=5), in_flight, state)
    assert api.get(f"/api/daemons/{daemon_id}").json()["online"] is False
    runs = api.get(f"/api/issues/{issue['number']}/runs").json()
    assert [r["status"] for r in runs] == ["queued"]


def test_this_processs_own_notice_coming_back_does_not_empty_its_cache_again(api, app, listening):
    """The process that changed a membership emptied its cache as it committed; on PostgreSQL its
    own NOTIFY reaches its listener later, after requests have read principals again (a CI run's
    statement count caught the extra read). A notice from another process still empties it, and
    open streams are checked again either way."""
    from predictorx.server.hub import PRINCIPALS_CHANGED

    state = app.state.px
    state.principals.ttl = 3600
    checked = threading.Semaphore(0)
    state.hub.on_notice(PRINCIPALS_CHANGED, checked.release)
    assert _me(api, api.token) == 200 and len(state.principals) == 1
    state.hub.publish([{"type": PRINCIPALS_CHANGED, "from": state.hub.origin}])  # (delivered on its loop)
    assert checked.acquire(timeout=30)
    assert len(state.principals) == 1
    state.hub.publish([{"type": PRINCIPALS_CHANGED, "from": "another-process"}])
    assert checked.acquire(timeout=30)
    assert len(state.principals) == 0


def test_a_membership_change_notifies_with_this_processs_origin(api, app, database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has no NOTIFY: one process")
    import json

    import psycopg

    from predictorx.server.hub import CHANNEL, PRINCIPALS_CHANGED

    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"LISTEN {CHANNEL}")
        assert api.post("/api/workspaces/default/members", json={"name": "Ann"}).status_code == 201
        notices = [e for note in conn.notifies(timeout=30, stop_after=1) for e in json.loads(note.payload)]
    assert {"type": PRINCIPALS_CHANGED, "from": app.state.px.hub.origin} in notices


def test_a_revocation_whose_commit_answer_was_lost_still_empties_the_cache(api, app, monkeypatch, listening):
    """The commit went through but its answer never came back (the connection dropped): the write
    raises, yet the token may be revoked. This process skips its own notice, so it must forget by
    itself — a review found the revoked principal kept for its 2 s lifetime."""
    from contextlib import contextmanager

    from sqlalchemy import update

    from predictorx.store.schema import Token

    state = app.state.px
    state.principals.ttl = 3600
    made = api.post("/api/tokens", json={"name": "laptop"}).json()
    assert _me(api, made["token"]) == 200 and len(state.principals) >= 1
    real = state.db.write

    @contextmanager
    def answer_lost():
        with real() as session:
            yield session
        raise ConnectionError("server closed the connection unexpectedly")
    monkeypatch.setattr(state.db, "write", answer_lost)
    with pytest.raises(ConnectionError):
        with state.write() as s:
            s.execute(update(Token).where(Token.id == made["id"]).values(revoked=True))
    monkeypatch.setattr(state.db, "write", real)
    assert len(state.principals) == 0
    assert _me(api, made["token"]) == 401
