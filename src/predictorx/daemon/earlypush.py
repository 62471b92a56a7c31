"""A run's push, started as soon as its commits exist (issue 22: run ended → PR opened).

The push target (remote URL, branch, lease and the connection's credential) is asked while the
agent works — once its running report is in (`prefetch`, `POST /api/daemon/tasks/<id>/push-target`
naming the branch it will report) — so the run's end needs no round trip before git. It is held
in this daemon's memory only (never the agent's environment, a file, a command line or a log) and
used only while it is younger than the server allows (`valid_for_s`, at most PREFETCH_KEEP); a
run that ends later, or a prefetch that got no answer, asks again at the agent's end (`ask`), and
a run that does not end well drops it at once. A push that fails with a prefetched target asks
once more and, when the server's answer differs (a rotated credential, another lease), pushes again.
In worktree mode the push starts from the delivery's quarantine the moment the run's head commit
is in it and builds on the branch — beside the leftover check (`delivery.deliver`'s `push_from`);
the delivery then tells the branch's final tip (`settle`): the head, or the leftover commit on top
of it, pushed next as a fast-forward leased on the head; only then is the push reported (a delivery
that failed reports nothing). The fetch into the person's repository, the handoff and the review
wait for it, so no other git of the daemon's shares the CPU with it after the leftover check. A repository checkout pushes from the repo cache once its review has the tip. As
soon as git is done the push is reported on its own (`POST /api/daemon/tasks/<id>/forge-push` with
the branch and the run's result): the server opens the PR and records both while the daemon
finishes the rest — which waits for that answer, so the delivery's fetch, the handoff and the
review (git processes, a write on the server) do not compete with the PR's open. If that report
fails, it rides on the task's finish (`forge_pushed`) instead.
At the agent's end (the target in hand) the forge's refs are asked at once (smartpush.discover,
beside the delivery) and that discovery is handed to the push, which then only sends its pack.
The credential reaches git only as forgepush.py says (its environment, never argv) — or, when the
daemon speaks the push itself, only its own HTTP client's header (smartpush.py) — and is dropped
when the push is done. Whatever goes wrong here (no answer, a 404 from an older server) leaves the
old path: the finish's answer carries the target.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ..protocol import PushReport, Pushing
from .. import steptimes
from .serverapi import ServerApi, ServerError

log = logging.getLogger("predictorx.daemon")
RESULT_MAX = 20_000
#: The longest the delivery waits for the push before it goes on (git's own timeout is shorter).
PUSH_WAIT = 360.0
#: The longest the push report waits for the server to have planned its PR (`_plan_ahead`).
PLAN_WAIT = 2.0
#: The longest a push target asked while the agent works is kept (the server may allow less).
PREFETCH_KEEP = 120.0
#: What of two push targets must match for a push that failed with the first to gain nothing from the second.
_SAME_TARGET = ("remote_url", "branch", "username", "token")


class EarlyPush:
    """One task's early push. It needs the server connection (to ask for the target and report
    the push), the daemon's workspaces root (which repositories it may push from:
    forgework.checked_repository) and the run's masker (for the result it sends) — not the host."""

    def __init__(self, api: ServerApi, workspaces_root: Path, task_id: str,
                 mask: Callable[[Any], Any] = lambda x: x):
        self.api, self.workspaces_root, self.task_id, self.mask = api, workspaces_root, task_id, mask
        self._result: str | None = None  # the run's result: the PR's body reads it
        self._git_done = asyncio.Event()  # the push and its report are over (the delivery goes on)
        self.branch: dict[str, str] = {}   # the branch the finish will report (forgepush.EARLY_KEYS)
        self._target: asyncio.Future[dict[str, Any] | None] | None = None
        self._fresh_until = 0.0  # the event loop's clock: the target answered is used until then
        self._prefetched = False  # the target in hand was asked while the agent worked
        self._push: asyncio.Future[PushReport | None] | None = None
        self._final: asyncio.Future[str | None] | None = None  # the branch's final tip (`settle`)
        self._planning: asyncio.Future[None] | None = None  # the push under way, told (`_plan_ahead`)
        self._discovery: asyncio.Future[Any] | None = None  # the forge's refs, asked at the agent's end

    def name(self, mode: str, branch: str | None, repo: Path, origin_url: str | None, continued_from: str | None,
             *, label: str | None = None) -> None:
        """Where the run's branch will be, as its review will say (service/forgepush.EARLY_KEYS)."""
        named = {"mode": mode, "branch": branch, "repo_path": str(repo), "repo_label": label or str(repo),
                 "origin_url": origin_url, "continued_from": continued_from}
        self.branch = {k: v for k, v in named.items() if isinstance(v, str) and v}

    def _pushable(self) -> bool:
        return bool(self.branch.get("branch") and self.branch.get("origin_url"))

    def prefetch(self) -> None:
        """The agent works (its running report is in): ask for the push target now, so its end
        needs no round trip before the push (only for a repository with a forge URL)."""
        if self._target is None and self._push is None and self._pushable():
            self._target, self._prefetched = asyncio.ensure_future(self._ask()), True

    def prefetch_after(self, running: "asyncio.Future[Any]") -> "asyncio.Future[Any]":
        """`prefetch` once the running report `running` is in (not when it failed); returns it."""
        def reported(done: "asyncio.Future[Any]") -> None:
            if not done.cancelled() and done.exception() is None:
                self.prefetch()
        running.add_done_callback(reported)
        return running

    def ask(self, ended_well: bool, result: str | None = None) -> None:
        """The agent ended (`ended_well`: completed, not cancelled). Well: keep the target asked
        while it worked if it is still fresh (or on its way), else ask now — its answer comes
        while the work is delivered. Otherwise the target is dropped at once."""
        steptimes.mark(self.task_id, "agent_exited")
        if not ended_well:
            self.drop()
            return
        if self._push is not None or not self._pushable():
            return
        self._result = result[:RESULT_MAX] if result else None
        held = self._target
        if held is None or (held.done() and asyncio.get_running_loop().time() >= self._fresh_until):
            self.drop()
            self._target, self._prefetched = asyncio.ensure_future(self._ask()), False
        if self._target is not None:
            self._discovery = asyncio.ensure_future(self._discover(self._target))

    async def _discover(self, target: "asyncio.Future[dict[str, Any] | None]") -> Any:
        """The forge's refs asked (smartpush.discover) as soon as the agent ended and the target is
        in hand, beside the delivery's leftover check: the push then only sends. None (no target)
        or why the daemon will not speak the push itself (smartpush.Unsupported: `git push` does
        it then, with no second discovery first)."""
        from . import forgepush, forgework, smartpush

        given = await asyncio.shield(target)
        if given is None:
            return None
        try:
            return await smartpush.discover(forgework.target_from(given, self.api.server_url))
        except smartpush.Unsupported as e:
            log.debug("task %s: no early ref discovery (%s)", self.task_id, e)
            return e
        except (forgepush.PushError, KeyError, TypeError, ValueError) as e:
            log.debug("task %s: no early ref discovery (%s)", self.task_id, e)
            return None

    async def _ask(self) -> dict[str, Any] | None:
        steptimes.mark(self.task_id, "target_asked")
        try:
            answer = await self.api.call("POST", f"/api/daemon/tasks/{self.task_id}/push-target",
                                         self.branch, retries=1)
            steptimes.mark(self.task_id, "target_answered")
        except ServerError as e:
            log.info("task %s: no early push target (%s); the finish will say", self.task_id, e.detail)
            self._fresh_until = 0.0  # asked again at the agent's end
            return None
        answer = answer or {}
        try:
            keep = min(PREFETCH_KEEP, float(answer.get("valid_for_s", PREFETCH_KEEP)))
        except (TypeError, ValueError):
            keep = 0.0
        self._fresh_until = asyncio.get_running_loop().time() + keep
        return answer.get("forge_push") or None

    def start(self, branch: str | None, tip: str | None, quarantine: Path | None = None, *,
              final_to_come: bool = False) -> None:
        """The branch is at `tip` in the repository it is pushed from (`quarantine`: the
        delivery's; default the one the server names): push it (if asked for). `final_to_come`:
        the branch's final tip is told later (`settle`), and the push is reported only then."""
        if self._target is None or self._push is not None:
            return
        if not branch or not tip or branch != self.branch.get("branch"):
            self.drop()
            return
        if final_to_come:
            self._final = asyncio.get_running_loop().create_future()
        self._push = asyncio.ensure_future(self._push_at(tip, quarantine))

    def settle(self, final: str | None) -> None:
        """The branch's final tip, for a push started with `final_to_come`: the tip pushed, a
        commit on top of it (the run's leftover files: pushed next, a fast-forward, then reported)
        or None (the delivery did not finish: nothing is reported)."""
        if self._final is not None and not self._final.done():
            self._final.set_result(final)

    async def _push_at(self, tip: str, quarantine: Path | None) -> PushReport | None:
        try:
            assert self._target is not None
            given = await self._target
            self._target = None
            if given is None:
                return None
            session, self._discovery = self._discovery, None  # the forge's refs, asked at the agent's end
            steptimes.mark(self.task_id, "push_start")
            pushing = asyncio.ensure_future(self._pushed(given, tip, quarantine, session))
            self._plan_ahead()  # once git is on its way: the server plans the PR meanwhile
            ok, sha, error, given = await pushing
            final = await self._final_tip(tip)
            if final is not None and final != tip:  # the leftover commit, on top of what was pushed
                ok, sha, error, given = await (self._fast_forward(given, sha, final, quarantine) if ok and sha
                                               else self._pushed(given, final, quarantine))
            del given  # the credential lives no longer than the push
            steptimes.mark(self.task_id, "push_end")
            if final is None:
                log.warning("task %s: its work was not delivered; the push of %s is not reported", self.task_id,
                            tip[:12])
                return None
            if ok is None:
                return None
            report = PushReport(ok, sha, error)
            if self._planning is not None:  # its plan ready first: the report does not read it again
                await asyncio.wait([self._planning], timeout=PLAN_WAIT)
            # A failed push opens no PR: its sentence goes with the finish, as before (no second try).
            return None if ok and await self._report(report) else report
        finally:
            self._git_done.set()  # after the report: the server opens the PR with the CPU to itself

    async def _final_tip(self, tip: str) -> str | None:
        if self._final is None:
            return tip
        try:
            return await asyncio.wait_for(asyncio.shield(self._final), PUSH_WAIT)
        except asyncio.TimeoutError:
            return None

    async def _pushed(self, given: dict[str, Any], tip: str, quarantine: Path | None, session: Any = None
                      ) -> tuple[bool | None, str | None, str | None, dict[str, Any]]:
        """The push of `tip`; one that failed with a target asked while the agent worked asks
        again and, when the answer differs, pushes again. Also returns the target it used.
        `session`: the forge's refs asked at the agent's end (smartpush.SessionLike), for the first push."""
        ok, sha, error = await self._push_to(given, tip, quarantine, session)
        if ok is False and self._prefetched:  # asked while the agent worked: ask again, maybe retry
            self._prefetched = False
            fresh = await self._ask()
            if fresh is not None and any(fresh.get(k) != given.get(k) for k in _SAME_TARGET + ("extra",)):
                log.info("task %s: its push target changed since it was asked; pushing again", self.task_id)
                ok, sha, error = await self._push_to(fresh, tip, quarantine)
                given = fresh
            del fresh
        return ok, sha, error, given

    async def _fast_forward(self, given: dict[str, Any], pushed: str, final: str, quarantine: Path | None
                            ) -> tuple[bool | None, str | None, str | None, dict[str, Any]]:
        """`final` (a commit on top of `pushed`) pushed where `pushed` just went: leased on it."""
        leased = {**given, "extra": {**(given.get("extra") or {}), "lease": pushed}}
        ok, sha, error = await self._push_to(leased, final, quarantine)
        return ok, sha, error, given

    async def _push_to(self, given: dict[str, Any], tip: str, quarantine: Path | None, session: Any = None
                       ) -> tuple[bool | None, str | None, str | None]:
        from . import forgework

        given = {**given, "extra": {**(given.get("extra") or {}), "tip": tip}}
        return await forgework.push_with(self.workspaces_root, self.task_id, given, quarantine, session=session,
                                         server_url=self.api.server_url)

    def _plan_ahead(self) -> None:
        """Tell the server the push is under way (`POST …/pushing`, the branch and result its report
        will carry): it plans the PR while git works. Not waited for; whatever it answers changes
        nothing here (an older server's 404: the report plans it then)."""
        body = Pushing(dict(self.branch), self.mask(self._result) if self._result else None)

        async def tell() -> None:
            try:
                await self.api.call("POST", f"/api/daemon/tasks/{self.task_id}/pushing", body.to_wire(), retries=0)
            except ServerError as e:
                log.debug("task %s: the server planned no PR ahead (%s)", self.task_id, e.detail)
        self._planning = asyncio.ensure_future(tell())

    async def _report(self, report: PushReport) -> bool:
        """The push's report, now: the server opens the PR without waiting for the finish. False
        when it did not go (the finish carries it then)."""
        early = PushReport(report.ok, report.sha, report.error, branch=dict(self.branch),
                           result=self.mask(self._result) if self._result else None)
        try:
            await self.api.call("POST", f"/api/daemon/tasks/{self.task_id}/forge-push", early.to_wire(), retries=1)
        except ServerError as e:
            log.info("task %s: its push report goes with its finish (%s)", self.task_id, e.detail)
            return False
        steptimes.mark(self.task_id, "push_reported")
        return True

    def quarantine_hook(self, branch: str) -> Callable[[Path, str], Callable[[str | None], None]]:
        """For delivery.deliver's `push_from` (called in its threads): start the push of `tip` from
        the quarantine on the event loop; the function it returns tells the branch's final tip
        (`settle`) and waits until git is done and its report answered (the server opens the PR
        meanwhile with the CPU and its write lock to itself)."""
        loop = asyncio.get_running_loop()

        async def settled(final: str | None) -> None:
            self.settle(final)
            if self._push is not None:
                await self._git_done.wait()

        def push_from(quarantine: Path, tip: str) -> Callable[[str | None], None]:
            # In order on the loop: the push starts before its final tip is told.
            loop.call_soon_threadsafe(partial(self.start, branch, tip, quarantine, final_to_come=True))
            return lambda final: asyncio.run_coroutine_threadsafe(settled(final), loop).result(PUSH_WAIT)
        return push_from

    def may_report_first(self) -> bool:
        """A push target was asked (or a push started): its report may open the PR before the
        finish, and the PR's body reads the run's handoff, which must then not wait for the finish."""
        return self._target is not None or self._push is not None

    async def for_finish(self) -> PushReport | None:
        """The finish's `forge_pushed` (how the push went), or None when none was made."""
        if self._push is None:
            self.drop()
            return None
        try:
            return await asyncio.shield(self._push)
        except Exception:  # the finish goes whatever happened here
            log.exception("task %s: the early push failed", self.task_id)
            return None

    def delivered_hook(self, branch: str, then: Callable[[asyncio.AbstractEventLoop], None]) -> Callable[[str | None], None]:
        """For worktree.finalize's `delivered` (called in its thread): start the push on the event
        loop, then `then(loop)` (the handoff's facts, read before the worktree is removed)."""
        loop = asyncio.get_running_loop()

        def delivered(tip: str | None) -> None:
            loop.call_soon_threadsafe(self.start, branch, tip)
            then(loop)
        return delivered

    def drop(self) -> None:
        if self._target is not None:
            self._target.cancel()  # its answer (with the credential) is not kept
            self._target = None
        if self._discovery is not None:
            from . import smartpush

            smartpush.discard(self._discovery)
            self._discovery = None
