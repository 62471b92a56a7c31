"""Realtime fan-out: daemons and browsers subscribe; committed events are pushed to them.

Within one server process events go straight through asyncio queues. With PostgreSQL, events are
sent with NOTIFY inside the transaction that made them and every server process LISTENs, so a
daemon connected to any process hears about a task queued through any other (R-SC-2) — no broker.
The hub also carries small request/answer exchanges to a connected daemon (path checks).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from ..protocol import Event

log = logging.getLogger("predictorx.hub")
CHANNEL = "predictorx_events"
#: Events for one daemon's ears only: requests carry paths on that person's machine, and a
#: revocation ends that daemon's stream. Browsers and other daemons never see them.
PRIVATE_TYPES = (Event.REQUEST, Event.DAEMON_REVOKED)
#: What a daemon acts on; everything else on a workspace's stream (task_changed, task_messages …)
#: is for people's pages, and with fifty daemons connected it was written fifty times over.
DAEMON_TYPES = (Event.TASK_QUEUED, Event.TASK_CANCELLED, Event.PERMISSION_ANSWERED, *PRIVATE_TYPES)
#: A notice between server processes, never delivered to a subscriber: tokens or memberships
#: changed, so cached principals must be forgotten (server/principals.py).
PRINCIPALS_CHANGED = "principals_changed"
#: A notice between server processes: a workspace's model prices changed (service/price_cache.py).
PRICES_CHANGED = "prices_changed"
#: Put on a subscriber's own queue when its stream must end (never published).
STREAM_CLOSED = "stream_closed"
#: A task queued (with its id) wakes one of the connected daemons that may take it; the others
#: only if it is still queued this much later (issue 30: each of them made an empty claim).
#: The claim that takes it announces its task_changed, which calls their wake-up off. A daemon
#: that cannot or does not take it (full, stopping, without the agent's CLI, another task taken
#: first) costs the task this delay, never the task: the others are woken then, as before.
WAKE_OTHERS_S = 1.0
#: How long a daemon's free slots, as its last claim or finish here left them, are believed when
#: choosing whom to wake alone: a hint (a run may end meanwhile without a word to the server, or
#: a request go to another server process, whose hub keeps its own), so it only steers the choice
#: and expires — a wrong one costs a task WAKE_OTHERS_S at most, as choosing a full daemon did.
FREE_SLOTS_TRUST_S = 30.0
#: Daemons whose free slots are kept at most (expired ones are dropped first, then none added)
MAX_FREE_HINTS = 10_000


@dataclass(eq=False)
class Subscriber:
    workspace_id: str
    daemon_id: str | None = None
    #: a daemon's owner: only agents of the same owner are its to run (R-SEC-6)
    owner_id: str | None = None
    #: the SHA-256 of the token that opened the stream: it is checked again whenever tokens or
    #: memberships change (server/streamwatch.py), and the stream ends with it
    token_hash: str | None = None
    queue: asyncio.Queue = field(default_factory=lambda: asyncio.Queue(maxsize=10_000))
    closed: bool = False
    #: when the hub last woke it alone for a queued task (a count): the next goes to another
    woken: int = 0
    #: the providers of its runtimes as it connected (None: not known): a task queued for an
    #: agent of another provider is not one to wake it alone for
    providers: frozenset[str] | None = None

    def may_take(self, event: dict[str, Any]) -> bool:
        """Whether, by what the event says (service/tasks.py who_may_take), this daemon can claim
        the task: the agent's runtime is on it, or the agent has none and it runs the provider."""
        bound = event.get("runtime_daemon_id")
        if bound is not None:
            return self.daemon_id == bound
        provider = event.get("provider")
        return provider is None or self.providers is None or provider in self.providers

    def close(self) -> None:
        """End the stream: its reader stops at the next event it takes (this one, or the next ping)."""
        self.closed = True
        try:
            self.queue.put_nowait({"type": STREAM_CLOSED})
        except asyncio.QueueFull:  # its reader sees `closed` after the event it takes next
            pass

    def wants(self, event: dict[str, Any]) -> bool:
        if event.get("workspace_id") != self.workspace_id:
            return False
        type_, target = event.get("type"), event.get("daemon_id")
        if type_ in PRIVATE_TYPES:  # only the target daemon's own stream (R-SEC-5)
            return self.daemon_id is not None and target == self.daemon_id
        if self.daemon_id is None:  # a person's page sees the whole workspace
            return True
        if type_ not in DAEMON_TYPES or (target is not None and target != self.daemon_id):
            return False
        # A task queued for another person's agent is one this daemon may not claim: no wake-up
        # (and no empty claim) for it. An event that does not say whose it is wakes every daemon.
        owner = event.get("owner_id")
        return owner is None or self.owner_id is None or owner == self.owner_id


class Hub:
    def __init__(self) -> None:
        self._subs: set[Subscriber] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[str, tuple[str, asyncio.Future]] = {}  # request id -> (daemon id, answer)
        self._ids = itertools.count()
        self._notices: dict[str, list[tuple[Callable[[], None], bool]]] = {}
        #: names this process in the notices it sends, so that a handler for other processes'
        #: changes only (a cache this process emptied as it committed) skips its own coming back
        self.origin = uuid.uuid4().hex
        self._wakes = itertools.count(1)
        self._others_later: dict[str, asyncio.TimerHandle] = {}  # task id -> the other daemons' wake-up
        #: daemon id -> (its free slots after its last claim or finish here, when: time.monotonic())
        self._free: dict[str, tuple[int, float]] = {}

    def on_notice(self, type_: str, handler: Callable[[], None], *, others_only: bool = False) -> None:
        """Call `handler` (on the event loop) when a server process sends a notice of this type,
        and whenever LISTEN starts again (a notice may have been missed meanwhile); with
        `others_only`, not for a notice this process sent (one carrying its `origin`)."""
        self._notices.setdefault(type_, []).append((handler, others_only))

    def _notice(self, type_: str | None = None, origin: str | None = None) -> None:
        mine = origin == self.origin
        for t, handlers in self._notices.items():
            if type_ is None or t == type_:
                for handler, others_only in handlers:
                    if not (others_only and mine):
                        handler()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def subscribe(self, workspace_id: str, daemon_id: str | None = None, owner_id: str | None = None,
                  token_hash: str | None = None, providers: frozenset[str] | None = None) -> Subscriber:
        sub = Subscriber(workspace_id, daemon_id, owner_id, token_hash, providers=providers)
        self._subs.add(sub)
        return sub

    def subscribers(self) -> list[Subscriber]:
        return list(self._subs)

    def unsubscribe(self, sub: Subscriber) -> None:
        self._subs.discard(sub)
        if sub.daemon_id is not None and not self.daemon_connected(sub.daemon_id):
            self._free.pop(sub.daemon_id, None)

    def slots_free(self, daemon_id: str | None, free: int) -> None:
        """A daemon's claim or finish says how many of its slots are free after it (the routes, in
        the thread pool: one dict item set). A daemon known to be full is not woken alone."""
        if daemon_id is None:
            return
        now = time.monotonic()
        if len(self._free) >= MAX_FREE_HINTS:  # (daemons whose stream is on another process, say)
            for key, (_, at) in list(self._free.items()):
                if now - at >= FREE_SLOTS_TRUST_S:
                    self._free.pop(key, None)
        if len(self._free) < MAX_FREE_HINTS or daemon_id in self._free:
            self._free[daemon_id] = (free, now)

    def _known_full(self, sub: Subscriber) -> bool:
        hint = self._free.get(sub.daemon_id or "")
        return hint is not None and hint[0] <= 0 and time.monotonic() - hint[1] < FREE_SLOTS_TRUST_S

    def daemon_connected(self, daemon_id: str) -> bool:
        """(Also asked from a route's thread: the set is copied in one step, never iterated while
        the event loop changes it.)"""
        return any(s.daemon_id == daemon_id for s in list(self._subs))

    def _deliver(self, events: list[dict[str, Any]]) -> None:
        """On the event loop."""
        for event in events:
            type_ = event.get("type")
            if type_ in self._notices:
                self._notice(event["type"], event.get("from"))
                continue
            if type_ == Event.TASK_CHANGED and event.get("status") != "queued" and event.get("task_id"):
                later = self._others_later.pop(event["task_id"], None)
                if later is not None:  # taken (or ended): the other daemons need not look
                    later.cancel()
            wanting = [sub for sub in list(self._subs) if sub.wants(event)]
            if type_ == Event.TASK_QUEUED and event.get("task_id"):
                wanting = self._wake_one(event, wanting)
            for sub in wanting:
                self._put(sub, event)

    @staticmethod
    def _put(sub: Subscriber, event: dict[str, Any]) -> None:
        try:
            sub.queue.put_nowait(event)
        except asyncio.QueueFull:  # a stuck reader loses events, never the server
            log.warning("dropping event for a slow subscriber")

    def _wake_one(self, event: dict[str, Any], wanting: list[Subscriber]) -> list[Subscriber]:
        """Of the daemons that want this queued task and may take it (Subscriber.may_take) and
        are not known to be full (`slots_free`: a full one would only delay it), the one woken
        alone least recently, and people's pages; the other daemons WAKE_OTHERS_S later unless it
        leaves the queue. None such: all of them at once, as before."""
        daemons = [sub for sub in wanting if sub.daemon_id is not None]
        able = [sub for sub in daemons if sub.may_take(event) and not self._known_full(sub)]
        if len(daemons) < 2 or not able or self._loop is None:
            return wanting
        chosen = min(able, key=lambda sub: sub.woken)
        chosen.woken = next(self._wakes)
        task_id = event["task_id"]
        previous = self._others_later.pop(task_id, None)
        if previous is not None:
            previous.cancel()
        self._others_later[task_id] = self._loop.call_later(WAKE_OTHERS_S, self._wake_others, event, chosen)
        return [sub for sub in wanting if sub.daemon_id is None or sub is chosen]

    def _wake_others(self, event: dict[str, Any], woken: Subscriber) -> None:
        """The task is still queued: every other daemon that wants it now hears of it."""
        self._others_later.pop(event["task_id"], None)
        for sub in list(self._subs):
            if sub is not woken and sub.daemon_id is not None and sub.wants(event):
                self._put(sub, event)

    def publish(self, events: list[dict[str, Any]]) -> None:
        """Thread-safe: routes run in a thread pool."""
        if not events or self._loop is None or self._loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._deliver(events)
        else:
            self._loop.call_soon_threadsafe(self._deliver, events)

    # -- request/answer with a connected daemon ------------------------------------------------
    async def ask_daemon(self, workspace_id: str, daemon_id: str, payload: dict[str, Any],
                         timeout: float = 5.0) -> dict[str, Any] | None:
        """Send a request on the daemon's event stream and wait for its answer (None: no answer)."""
        if not self.daemon_connected(daemon_id):
            return None
        request_id = str(uuid.uuid4())
        fut = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (daemon_id, fut)
        try:
            self._deliver([{"workspace_id": workspace_id, "daemon_id": daemon_id, "type": Event.REQUEST,
                            "request_id": request_id, **payload}])
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            return None
        finally:
            self._pending.pop(request_id, None)

    def answer(self, request_id: str, daemon_id: str | None, answer: dict[str, Any]) -> bool:
        """Accept an answer only from the daemon the request went to; any other is ignored."""
        daemon_and_fut = self._pending.get(request_id)
        if daemon_and_fut is None or daemon_and_fut[0] != daemon_id or daemon_and_fut[1].done():
            return False
        fut = daemon_and_fut[1]
        fut.get_loop().call_soon_threadsafe(lambda: fut.done() or fut.set_result(answer))
        return True

    # -- PostgreSQL bridge ----------------------------------------------------------------------
    async def listen_postgres(self, url: str) -> None:
        """LISTEN forever (reconnecting), delivering what any server process NOTIFYs."""
        import psycopg

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=10) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self._notice()  # whatever was noticed while we were not listening
                    # Whatever was notified while we were not listening (a database restart) is
                    # lost: every subscribed daemon looks at the queue again instead.
                    self._deliver([{"workspace_id": ws, "type": Event.TASK_QUEUED}
                                   for ws in {sub.workspace_id for sub in self._subs}])
                    async for note in conn.notifies():
                        try:
                            events = json.loads(note.payload)
                            self._deliver(events if isinstance(events, list) else [events])
                        except ValueError:
                            log.warning("ignoring a malformed notification")
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 — keep listening across outages
                log.warning("LISTEN connection lost (%s); retrying in 1 s", e)
                await asyncio.sleep(1)
