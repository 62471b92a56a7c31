"""Let the owning daemon check a machine-local resource at save time (R-LD-1), when it is online.

Only the machine can see the folder, so the server asks that daemon over its event stream what
the resource type's `daemon_check` says to ask. When the daemon is not connected the resource is
saved and the daemon checks again before every task (R-LD-2), so a bad path still never runs.
The payload is normalised and its owner checked by the service's own rule
(`projects.check_resource`), the one the saving transaction applies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..resources import ResourceError
from .errors import ServiceError
from .projects import check_resource
from .transactions import Transactions

#: Runs a blocking function off the event loop: the API's thread pool or the pages' own.
Offload = Callable[..., Awaitable[Any]]


class DaemonAsker(Protocol):
    """Asks a connected daemon on its event stream (server/hub.Hub); None when it does not answer."""

    async def ask_daemon(self, workspace_id: str, daemon_id: str, payload: dict[str, Any],
                         timeout: float = ...) -> dict[str, Any] | None: ...


async def check_with_daemon(tx: Transactions, daemons: DaemonAsker, offload: Offload, workspace_id: str,
                            resource_type: str, ref: Any, prefix: str = "", *, actor_id: str | None) -> None:
    def checked() -> tuple[str | None, dict[str, Any] | None]:
        with tx.read() as s:
            try:
                handler, normalized, _ = check_resource(s, workspace_id, actor_id, resource_type, ref, None)
            except (ResourceError, ServiceError):
                return None, None  # the saving transaction reports it, with its full context
            return handler.owner_daemon_id(normalized), handler.daemon_check(normalized)
    if actor_id is None:
        return
    # Only the owner's own daemon is asked: nobody probes paths on someone else's machine (R-SEC-6);
    # check_resource refused anything else.
    daemon_id, request = await offload(checked)
    if not daemon_id or request is None:
        return
    answer = await daemons.ask_daemon(workspace_id, daemon_id, request)
    if answer is not None and not answer.get("ok", True):
        raise ResourceError(f"{prefix}{answer.get('error') or 'the daemon refused this path'}", status=422)
