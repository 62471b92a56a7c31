"""A registered webhook: the stand-in delivers events by itself, as a forge does, once a test calls
`standin.send_hooks_to(url)`.

Deliveries go out in order from one background thread (a forge delivers asynchronously: the API
call that caused the event does not wait for the receiver). A push is noticed the way it matters
to a receiver: the thread watches open PRs' head branches and sends "synchronize" when one moves.
Every delivery and the status the receiver answered is in `standin.hook_log`.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2 as httpx

if TYPE_CHECKING:
    from .standin import StandIn
    from .webhooks import Delivery


@dataclass
class Sent:
    event: str  # the generic name: pr, review, review_comment, comment, check
    delivery: "Delivery"
    status: int  # the receiver's HTTP status; 0 when it could not be reached
    error: str = ""


class HookSender:
    def __init__(self, standin: "StandIn", url: str, *, watch_interval: float = 0.1):
        self.standin = standin
        self.url = url
        self.watch_interval = watch_interval
        self._queue: queue.Queue[tuple[str, "Delivery"] | None] = queue.Queue()
        self._heads: dict[tuple[str, int], str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"standin-hooks-{standin.kind}", daemon=True)
        self._thread.start()

    def emit(self, event: str, path: str, number: int, **extra: Any) -> None:
        """Build the delivery now, from the state as it is at the event (as a forge does), send it later."""
        if event == "pr" and extra.get("action") == "opened":
            self._heads[(path, number)] = self.standin.repos[path].head(self.standin.pr(path, number).head) or ""
        try:
            delivery = self.standin.webhook(event, path, number, **extra)
        except (AssertionError, KeyError, StopIteration, IndexError, ValueError) as exc:
            self.standin.violation(f"the stand-in could not build its {event} webhook: {exc}")
            return
        self._queue.put((event, delivery))

    def stop(self) -> None:
        self._stop.set()
        self._queue.put(None)
        self._thread.join(15)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                item = self._queue.get(timeout=self.watch_interval)
            except queue.Empty:
                self._watch_pushes()
                continue
            if item is None:
                break
            self._send(*item)
            self._watch_pushes()

    def _watch_pushes(self) -> None:
        """A head that moved since the last look is a push: "synchronize" (GitLab: MR update)."""
        for path, repo in list(self.standin.repos.items()):
            for pr in list(repo.prs):
                if pr.state != "open":
                    continue
                head = repo.head(pr.head)
                before = self._heads.get((path, pr.number))
                self._heads[(path, pr.number)] = head or ""
                if before is not None and head and head != before:
                    repo.refresh(pr)
                    self.emit("pr", path, pr.number, action="synchronize", before=before)

    def _send(self, event: str, delivery: "Delivery") -> None:
        try:
            status, error = self.standin.deliver(self.url, delivery, timeout=10), ""
        except httpx.HTTPError as exc:
            status, error = 0, f"{type(exc).__name__}: {exc}"
        self.standin.hook_log.append(Sent(event, delivery, status, error))
