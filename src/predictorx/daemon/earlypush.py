"""A run's push, started as soon as its branch is there (issue 22: run ended → PR opened).

When the agent ends well, the daemon asks the server for the branch's push target at once
(`POST /api/daemon/tasks/<id>/push-target`, naming the branch it will report), while it still
delivers the work and collects the review. As soon as the branch's tip is in the repository the
daemon pushes from (the person's repository, the repo cache), the push starts; its result rides on
the task's finish (`forge_pushed`), where the server records it and opens the PR — one request for
finish, push report and PR. The credential reaches git only as forgepush.py says (its environment,
never argv), and is dropped when the push is done. Whatever goes wrong here (no answer, a 404 from
an older server) leaves the old path: the finish's answer carries the target.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..protocol import PushReport
from .serverapi import ServerApi, ServerError

log = logging.getLogger("predictorx.daemon")


class EarlyPush:
    """One task's early push. It needs the server connection (to ask for the target) and the
    daemon's workspaces root (which repositories it may push from: forgework.checked_repository),
    not the whole host."""

    def __init__(self, api: ServerApi, workspaces_root: Path, task_id: str):
        self.api, self.workspaces_root, self.task_id = api, workspaces_root, task_id
        self.branch: dict[str, str] = {}   # the branch the finish will report (forgepush.EARLY_KEYS)
        self._target: asyncio.Future[dict[str, Any] | None] | None = None
        self._push: asyncio.Future[PushReport | None] | None = None

    def name(self, mode: str, branch: str | None, repo: Path, origin_url: str | None, continued_from: str | None,
             *, label: str | None = None) -> None:
        """Where the run's branch will be, as its review will say (service/forgepush.EARLY_KEYS)."""
        named = {"mode": mode, "branch": branch, "repo_path": str(repo), "repo_label": label or str(repo),
                 "origin_url": origin_url, "continued_from": continued_from}
        self.branch = {k: v for k, v in named.items() if isinstance(v, str) and v}

    def ask(self, ended_well: bool) -> None:
        """The agent ended (`ended_well`: completed, not cancelled): ask for the push target now
        (only for a repository with a forge URL) — its answer comes while the work is delivered."""
        if ended_well and self._target is None and self.branch.get("branch") and self.branch.get("origin_url"):
            self._target = asyncio.ensure_future(self._ask())

    async def _ask(self) -> dict[str, Any] | None:
        try:
            answer = await self.api.call("POST", f"/api/daemon/tasks/{self.task_id}/push-target",
                                                self.branch, retries=1)
        except ServerError as e:
            log.info("task %s: no early push target (%s); the finish will say", self.task_id, e.detail)
            return None
        return (answer or {}).get("forge_push") or None

    def start(self, branch: str | None, tip: str | None) -> None:
        """The branch is at `tip` in the repository it is pushed from: push it (if asked for)."""
        if self._target is None or self._push is not None:
            return
        if not branch or not tip or branch != self.branch.get("branch"):
            self.drop()
            return
        self._push = asyncio.ensure_future(self._push_at(tip))

    async def _push_at(self, tip: str) -> PushReport | None:
        from . import forgework

        assert self._target is not None
        given = await self._target
        self._target = None
        if given is None:
            return None
        given = {**given, "extra": {**(given.get("extra") or {}), "tip": tip}}
        ok, sha, error = await forgework.push_with(self.workspaces_root, self.task_id, given)
        if ok is None:
            return None
        return PushReport(ok, sha, error)

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
