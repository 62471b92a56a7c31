"""Issue 29 §8: a removed member's open `/api/events` stream kept delivering the workspace's events
(their token answered 401, but the stream had been authenticated once, when it opened). Streams
now end when the membership or the token that opened them ends — over real SSE, on one server
process (SQLite and PostgreSQL), and across two replicas sharing PostgreSQL (the removal made
through one, the stream held by the other).
"""

from __future__ import annotations

import json
import shutil
import threading

import httpx2 as httpx
import pytest

from databases import POSTGRES_URL, drop_postgres_schema, postgres_schema_url

from .harness import Server, wait_until

#: A stream must end this soon after the removal (it ends in milliseconds; the machine is shared).
END_WITHIN = 15.0


class Stream:
    """`GET /api/events` read on a thread: the events it delivered, and whether it has ended."""

    def __init__(self, url: str, token: str):
        self.events: list[dict] = []
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(url, token), daemon=True)
        self._thread.start()
        wait_until(lambda: self.types() or self.ended.is_set(), 20, what="the stream's hello")
        assert self.types()[:1] == ["hello"], self.events

    def _read(self, url: str, token: str) -> None:
        try:
            # Read timeout above the server's 15 s ping: only the server ends this stream.
            with httpx.stream("GET", f"{url}/api/events", headers={"Authorization": f"Bearer {token}"},
                              timeout=httpx.Timeout(10, read=60)) as r:
                for line in r.iter_lines():
                    if line.startswith("data:"):
                        self.events.append(json.loads(line[5:]))
        except httpx.HTTPError:
            pass
        finally:
            self.ended.set()

    def types(self) -> list[str]:
        return [e.get("type", "") for e in self.events]

    def close(self) -> None:
        self._thread.join(0)


def _member(server: Server, name: str) -> tuple[str, str, str]:
    ws = server.api("GET", "/api/workspaces")[0]["id"]
    made = server.api("POST", f"/api/workspaces/{ws}/members", {"name": name})
    return ws, made["user_id"], made["token"]


def _new_task(server: Server, title: str) -> None:
    """An issue assigned to an agent: its task's `task_queued` goes to every stream of the workspace."""
    if not any(a["name"] == "worker" for a in server.api("GET", "/api/agents")):
        server.api("POST", "/api/agents", {"name": "worker", "provider": "command", "command": ["true"]})
    server.api("POST", "/api/issues", {"title": title, "assignee": "worker"})


def test_a_removed_members_stream_ends(tmp_path, database_url):
    server = Server(tmp_path / "home", database_url)
    try:
        ws, bob_id, bob_token = _member(server, "bob")
        bob = Stream(server.url, bob_token)
        owner = Stream(server.url, server.token)
        _new_task(server, "seen by both")
        wait_until(lambda: len(bob.events) > 1, 20, what="bob's stream to deliver an event")
        server.api("DELETE", f"/api/workspaces/{ws}/members/{bob_id}")
        assert bob.ended.wait(END_WITHIN), f"the removed member's stream kept going: {bob.types()}"
        seen = len(bob.events)
        _new_task(server, "not for bob")
        wait_until(lambda: len(owner.events) > 2, 20, what="the owner's stream to deliver the next event")
        assert len(bob.events) == seen and not owner.ended.is_set()  # only bob's stream ended
    finally:
        server.stop()


def test_a_revoked_tokens_stream_ends_and_no_other(tmp_path, database_url):
    server = Server(tmp_path / "home", database_url)
    try:
        _ws, _bob_id, bob_token = _member(server, "bob")
        bob = {"Authorization": f"Bearer {bob_token}"}
        extra = server.api("POST", "/api/tokens", {"name": "laptop"}, headers=bob)
        kept, revoked = Stream(server.url, bob_token), Stream(server.url, extra["token"])
        server.api("DELETE", f"/api/tokens/{extra['id']}", headers=bob)
        assert revoked.ended.wait(END_WITHIN), f"the revoked token's stream kept going: {revoked.types()}"
        _new_task(server, "still for bob's other token")
        wait_until(lambda: len(kept.events) > 1, 20, what="bob's other stream to deliver an event")
        assert not kept.ended.is_set()
    finally:
        server.stop()


@pytest.mark.postgres
@pytest.mark.skipif(not POSTGRES_URL, reason="needs PREDICTORX_TEST_POSTGRES_URL")
def test_a_removed_members_stream_on_another_replica_ends(tmp_path):
    url, schema = postgres_schema_url(POSTGRES_URL)
    started: list[Server] = []
    try:
        a = Server(tmp_path / "a-home", url)
        started.append(a)
        (tmp_path / "b-home").mkdir()
        shutil.copy(a.home / "config.json", tmp_path / "b-home" / "config.json")  # the owner's token
        b = Server(tmp_path / "b-home", url)
        started.append(b)
        ws, bob_id, bob_token = _member(a, "bob")
        on_b = Stream(b.url, bob_token)
        a.api("DELETE", f"/api/workspaces/{ws}/members/{bob_id}")  # through replica a
        assert on_b.ended.wait(END_WITHIN), f"replica b kept the removed member's stream: {on_b.types()}"
    finally:
        for s in started:
            s.stop()
        drop_postgres_schema(POSTGRES_URL, schema)
