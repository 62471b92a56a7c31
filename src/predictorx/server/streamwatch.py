"""Open event streams end when the token or membership that opened them ends (issue 29 §8).

A stream is authenticated once, when it opens; a person removed from the workspace, or a token
revoked, used to keep receiving the workspace's events on a stream opened before. Every
subscriber remembers its token's hash, and the streams are checked again:

- whenever tokens or memberships change — the `principals_changed` notice every write that changes
  them sends (server/state.py): in this process at once, in every other server process through
  PostgreSQL's NOTIFY (server/hub.py), so a stream held by another replica ends too; and when a
  process's LISTEN connection comes back (a notice may have been missed meanwhile);
- every RECHECK_SECONDS anyway, for what changes without a write: a token expiring.

A stream whose token no longer authenticates, or whose principal is no longer in the stream's
workspace (or, for a daemon, is no longer that daemon), is closed: its reader ends the response.
"""

from __future__ import annotations

import asyncio
import logging

from fastapi.concurrency import run_in_threadpool

from ..service import auth
from .hub import PRINCIPALS_CHANGED, Subscriber
from .state import AppState

log = logging.getLogger("predictorx.server")
RECHECK_SECONDS = 30.0


def _still_allowed(principal: auth.Principal, sub: Subscriber) -> bool:
    if sub.workspace_id not in principal.workspace_ids:
        return False
    return sub.daemon_id is None or principal.daemon_id == sub.daemon_id


class StreamWatch:
    def __init__(self, state: AppState):
        self.state = state
        self._running: asyncio.Task | None = None
        self._again = False
        state.hub.on_notice(PRINCIPALS_CHANGED, self.soon)

    def soon(self) -> None:
        """Check the open streams (on the event loop; one check at a time, one more if asked meanwhile)."""
        if self._running is not None and not self._running.done():
            self._again = True
            return
        self._running = asyncio.get_running_loop().create_task(self._checks())

    async def _checks(self) -> None:
        self._again = True
        while self._again:
            self._again = False
            try:
                await self.check()
            except Exception:  # the next change or the periodic check tries again
                log.exception("checking the open event streams failed")

    async def check(self) -> int:
        """Close the streams whose token or membership has ended; how many were closed."""
        subs = [s for s in self.state.hub.subscribers() if s.token_hash and not s.closed]
        if not subs:
            return 0
        principals = await run_in_threadpool(self._principals, {s.token_hash for s in subs})
        ended = [s for s in subs if principals.get(s.token_hash) is None
                 or not _still_allowed(principals[s.token_hash], s)]
        for sub in ended:
            sub.close()
        return len(ended)

    def _principals(self, hashes: set[str | None]) -> dict[str | None, auth.Principal | None]:
        found: dict[str | None, auth.Principal | None] = {}
        with self.state.read() as s:
            for token_hash in hashes:
                try:
                    found[token_hash] = auth.authenticate_hash(s, token_hash or "")
                except auth.Unauthorized:
                    found[token_hash] = None
        return found

    async def every(self, seconds: float = RECHECK_SECONDS) -> None:
        """The periodic check (a lifespan job)."""
        while True:
            await asyncio.sleep(seconds)
            self.soon()
