"""A task queued wakes one of the daemons that may take it, the others only if it is still queued
WAKE_OTHERS_S later (server/hub.py, issue 30): each of them made an empty claim. The claim that
takes it calls the others' wake-up off; a daemon that does not take it costs the task that delay,
never the task. A task_queued without a task id, and people's pages, are as before: at once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import pytest

from predictorx.server import hub as hub_module
from predictorx.server.hub import Hub

WAIT_S = 30.0  # generous: a loaded 2-core machine


def _queued(task_id: str | None = "t1", owner: str = "alice") -> dict[str, Any]:
    event = {"workspace_id": "ws", "type": "task_queued", "owner_id": owner}
    return {**event, "task_id": task_id} if task_id else event


def _got(sub) -> list[dict[str, Any]]:
    out = []
    while not sub.queue.empty():
        out.append(sub.queue.get_nowait())
    return out


async def _until(condition, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def _hub() -> Hub:
    hub = Hub()
    hub.bind(asyncio.get_running_loop())
    return hub


def test_one_daemon_is_woken_and_the_others_only_if_the_task_is_still_queued(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub_module, "WAKE_OTHERS_S", 0.05)

    async def main() -> None:
        hub = _hub()
        daemons = [hub.subscribe("ws", f"d{i}", "alice") for i in range(3)]
        bobs, page = hub.subscribe("ws", "b1", "bob"), hub.subscribe("ws")
        hub.publish([_queued("t1")])
        first = [d for d in daemons if _got(d)]
        assert len(first) == 1 and [e["task_id"] for e in _got(page)] == ["t1"]
        # nobody took it: the others hear of it a moment later (never Bob's daemon)
        rest = [d for d in daemons if d is not first[0]]
        await _until(lambda: all(not d.queue.empty() for d in rest), "the other daemons' wake-up")
        assert [[e["task_id"] for e in _got(d)] for d in rest] == [["t1"], ["t1"]]
        assert _got(first[0]) == [] and _got(bobs) == [] and hub._others_later == {}

    asyncio.run(main())


def test_the_claim_that_takes_it_calls_the_others_wake_up_off_and_the_next_task_wakes_another() -> None:
    async def main() -> None:
        hub = _hub()
        daemons = [hub.subscribe("ws", f"d{i}", "alice") for i in range(3)]
        woken = []
        for task_id in ("t1", "t2", "t3"):
            hub.publish([_queued(task_id)])
            took = [d for d in daemons if _got(d)]
            assert len(took) == 1
            woken.append(took[0])
            later = hub._others_later[task_id]
            hub.publish([{"workspace_id": "ws", "type": "task_changed", "task_id": task_id, "status": "dispatched"}])
            assert later.cancelled() and task_id not in hub._others_later
        assert len(set(map(id, woken))) == 3  # each task woke another daemon
        assert all(_got(d) == [] for d in daemons)

    asyncio.run(main())


def test_a_task_queued_without_its_id_or_for_one_daemon_wakes_them_all_at_once() -> None:
    async def main() -> None:
        hub = _hub()
        daemons = [hub.subscribe("ws", f"d{i}", "alice") for i in range(3)]
        hub.publish([_queued(None)])  # a freed slot, a refusal, LISTEN again: whose task is unknown
        assert all(len(_got(d)) == 1 for d in daemons) and hub._others_later == {}
        alone = Hub()
        alone.bind(asyncio.get_running_loop())
        only = alone.subscribe("ws", "d1", "alice")
        alone.publish([_queued("t1")])
        assert len(_got(only)) == 1 and alone._others_later == {}

    asyncio.run(main())


def _next_event(lines) -> dict[str, Any]:
    import json

    for line in lines:
        if line.startswith("data:"):
            return json.loads(line[5:])
    raise AssertionError("the stream ended")


def _events(api, d):
    return api.client.stream("GET", "/api/daemon/events", headers={"Authorization": f"Bearer {d.token}"})


@contextlib.contextmanager
def _two_daemons(api, first: str, second: str):
    """Two daemons of one owner (their providers `first`, `second`) on their event streams, the
    first one's turn to be woken alone, and an issue assigned to a `command` agent: (the daemons,
    their streams' lines, the hub)."""
    one, two = api.register_daemon(first), api.register_daemon(second)
    api.post("/api/agents", json={"name": "cmd", "provider": "command", "command": ["true"]})
    with _events(api, one) as r1, _events(api, two) as r2:
        lines = r1.iter_lines(), r2.iter_lines()
        assert _next_event(lines[0])["type"] == _next_event(lines[1])["type"] == "hello"
        hub = api.client.app.state.px.hub
        for sub in hub.subscribers():
            sub.woken = 0 if _is(sub, one) else 10**9
        api.post("/api/issues", json={"title": "x", "assignee": "cmd"})
        yield (one, two), lines, hub


def test_a_daemon_that_does_not_take_it_leaves_the_task_claimed_by_another(api, monkeypatch) -> None:
    """Through the server: the daemon woken first does not claim (full, stopping); the task is
    still claimed by the other, which hears of it WAKE_OTHERS_S later."""
    monkeypatch.setattr(hub_module, "WAKE_OTHERS_S", 0.2)
    with _two_daemons(api, "command", "command") as ((_, other), (lines_idle, lines_other), _hub_):
        e = _next_event(lines_idle)
        assert e["type"] == "task_queued"
        e = _next_event(lines_other)  # WAKE_OTHERS_S later: nobody claimed it
        assert e["type"] == "task_queued"
        claimed = other.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
        assert [c["task"]["id"] for c in claimed] == [e["task_id"]]


def test_the_daemon_woken_alone_is_one_that_may_take_the_task(api) -> None:
    """Through the server: of an owner's daemons, only one with the agent's provider (or the one
    its runtime is on) is woken first, whatever the turn says: one without it would only delay it."""
    with _two_daemons(api, "gemini", "command") as ((_, can), (_, lines_can), hub):  # the other's turn
        e = _next_event(lines_can)
        assert (e["type"], e["provider"]) == ("task_queued", "command")
        assert hub._others_later[e["task_id"]] is not None
        claimed = can.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
        assert [c["task"]["id"] for c in claimed] == [e["task_id"]]
        deadline = time.monotonic() + WAIT_S  # its claim calls the other's wake-up off (on the loop)
        while e["task_id"] in hub._others_later:
            assert time.monotonic() < deadline, "the claim did not call the other daemon's wake-up off"
            time.sleep(0.01)


def test_an_agent_bound_to_a_runtime_wakes_that_runtime_s_daemon_first() -> None:
    async def main() -> None:
        hub = _hub()
        d0, d1, d2 = (hub.subscribe("ws", f"d{i}", "alice", providers=frozenset({"claude"})) for i in range(3))
        d2.woken = 10**9  # not its turn
        for task_id in ("t1", "t2"):
            hub.publish([{**_queued(task_id), "provider": "claude", "runtime_daemon_id": "d2"}])
            assert [len(_got(d)) for d in (d0, d1, d2)] == [0, 0, 1]
        # by provider: only the daemon that runs it; none runs it: every daemon at once, as before
        d0.providers = frozenset({"codex"})
        hub.publish([{**_queued("t3"), "provider": "codex"}])
        assert [len(_got(d)) for d in (d0, d1, d2)] == [1, 0, 0]
        hub.publish([{**_queued("t4"), "provider": "gemini"}])
        assert [len(_got(d)) for d in (d0, d1, d2)] == [1, 1, 1] and "t4" not in hub._others_later

    asyncio.run(main())


def test_a_daemon_known_to_be_full_is_not_woken_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its last claim or finish here left it no free slot: another is woken alone even on its
    turn (it would only cost the task WAKE_OTHERS_S); every one full: all at once, as before; the
    hint expires (a run may end without a word to this process)."""
    async def main() -> None:
        hub = _hub()
        d0, d1, d2 = (hub.subscribe("ws", f"d{i}", "alice") for i in range(3))
        d1.woken, d2.woken = 10**9, 10**9 + 1  # d0's turn, then d1's
        hub.slots_free("d0", 0)
        hub.publish([_queued("t1")])
        assert [len(_got(d)) for d in (d0, d1, d2)] == [0, 1, 0]
        hub.slots_free("d0", 2)  # a finish or claim said it has room again: its turn still
        hub.publish([_queued("t2")])
        assert [len(_got(d)) for d in (d0, d1, d2)] == [1, 0, 0]
        for d in ("d0", "d1", "d2"):
            hub.slots_free(d, 0)
        hub.publish([_queued("t3")])
        assert [len(_got(d)) for d in (d0, d1, d2)] == [1, 1, 1] and "t3" not in hub._others_later
        monkeypatch.setattr(hub_module, "FREE_SLOTS_TRUST_S", 0.0)  # believed no longer
        hub.publish([_queued("t4")])
        assert sum(len(_got(d)) for d in (d0, d1, d2)) == 1 and "t4" in hub._others_later
        hub.unsubscribe(d0)  # (what is known of a daemon goes with its last stream)
        assert "d0" not in hub._free and "d1" in hub._free

    asyncio.run(main())


def test_a_claim_that_fills_a_daemon_and_its_finish_tell_the_hub(api, monkeypatch) -> None:
    """Through the server: a daemon whose claim took as many tasks as it asked for is full; the
    next task wakes the other daemon alone, on the full one's turn; its finish with room again
    (`claim_next`, nothing queued) makes it one to wake again."""
    monkeypatch.setattr(hub_module, "WAKE_OTHERS_S", 600.0)  # (only a daemon woken alone hears of it)
    with _two_daemons(api, "command", "command") as ((full, other), (lines_full, lines_other), hub):
        first = _next_event(lines_full)
        assert first["type"] == "task_queued"
        taken = full.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
        assert [c["task"]["id"] for c in taken] == [first["task_id"]]
        sub_full = next(sub for sub in hub.subscribers() if _is(sub, full))
        sub_full.woken = 0  # its turn again
        assert api.patch("/api/agents/cmd", json={"max_concurrent_tasks": 2}).status_code == 200
        api.post("/api/issues", json={"title": "y", "assignee": "cmd"})
        second = _next_event(lines_other)
        assert second["type"] == "task_queued" and second["task_id"] in hub._others_later  # woken alone
        assert [c["task"]["id"] for c in other.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]] \
            == [second["task_id"]]
        assert hub._known_full(sub_full)
        done = full.post(f"/api/daemon/tasks/{first['task_id']}/finish", json={"status": "completed", "claim_next": 1})
        assert done.status_code == 200 and done.json()["claimed"] == []
        assert not hub._known_full(sub_full)


def test_a_claim_whose_task_could_not_be_handed_over_leaves_the_daemon_free(api, monkeypatch) -> None:
    """What fills a daemon is what its claim handed it: a task refused in the claim (its agent's
    variables could not be opened, service/agentenv.py) leaves its slot free, and it is woken."""
    from predictorx.service import agentenv, secretbox

    def cannot_open(*_a: Any, **_kw: Any) -> Any:
        raise secretbox.SecretError("the key is gone")

    monkeypatch.setattr(hub_module, "WAKE_OTHERS_S", 600.0)
    monkeypatch.setattr(agentenv, "for_claim", cannot_open)
    with _two_daemons(api, "command", "command") as ((one, _), (lines_one, _), hub):
        assert _next_event(lines_one)["type"] == "task_queued"
        assert one.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"] == []
        assert not hub._known_full(next(sub for sub in hub.subscribers() if _is(sub, one)))


def test_what_is_known_of_daemons_without_a_stream_here_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Daemons whose requests come here and whose streams are elsewhere (several server
    processes): their expired hints go first, and past the bound no new one is kept."""
    async def main() -> None:
        hub = _hub()
        monkeypatch.setattr(hub_module, "MAX_FREE_HINTS", 100)
        for i in range(150):
            hub.slots_free(f"d{i}", 0)
        assert len(hub._free) == 100
        monkeypatch.setattr(hub_module, "FREE_SLOTS_TRUST_S", 0.0)  # every one expired
        hub.slots_free("late", 1)
        assert list(hub._free) == ["late"]

    asyncio.run(main())


def test_asking_whether_a_daemon_is_connected_from_a_route_s_thread_never_fails() -> None:
    """(The daemon routes ask from the thread pool while the event loop subscribes and
    unsubscribes: iterating the set itself then raised "Set changed size during iteration".)"""
    import threading

    hub = Hub()
    subs = [hub.subscribe("ws", f"d{i}") for i in range(1000)]
    failed: list[BaseException] = []
    stop = threading.Event()

    def ask() -> None:
        try:
            while not stop.is_set():
                hub.daemon_connected("none")
        except RuntimeError as e:
            failed.append(e)

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        for _ in range(100):
            if failed:
                break
            for sub in subs[:50]:
                hub.unsubscribe(sub)
            subs[:50] = [hub.subscribe("ws", f"n{i}") for i in range(50)]
    finally:
        stop.set()
        asker.join(WAIT_S)
    assert not failed, failed


def _is(sub, daemon_api) -> bool:
    from predictorx.service.auth import hash_token

    return sub.token_hash == hash_token(daemon_api.token)
