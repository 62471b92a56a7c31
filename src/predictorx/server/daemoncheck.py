"""Let the owning daemon check a machine-local resource at save time (R-LD-1), when it is online.

Only the machine can see the folder, so the server asks that daemon over its event stream what
the resource type's `daemon_check` says to ask. When the daemon is not connected the resource is
saved and the daemon checks again before every task (R-LD-2), so a bad path still never runs.
"""

from __future__ import annotations

from typing import Any

from fastapi.concurrency import run_in_threadpool

from .. import resources as registry
from ..resources import ResourceError
from ..service.daemons import find_daemon
from .state import AppState


def _owned_by(state: AppState, workspace_id: str, daemon_id: str, actor_id: str | None) -> bool:
    with state.read() as s:
        d = find_daemon(s, workspace_id, daemon_id)
        return d is not None and d.owner_id is not None and d.owner_id == actor_id


async def check_with_daemon(state: AppState, workspace_id: str, resource_type: str, ref: Any,
                            prefix: str = "", *, actor_id: str | None) -> None:
    try:
        handler = registry.get(resource_type)
        if not isinstance(ref, dict):
            return  # the service answers the shape error
        normalized = handler.normalize(registry.split_label(ref, None)[0])
    except ResourceError:
        return  # the transaction below reports it with full context
    daemon_id = handler.owner_daemon_id(normalized)
    request = handler.daemon_check(normalized)
    if not daemon_id or request is None:
        return
    # Only the owner's own daemon is asked: nobody probes paths on someone else's machine (R-SEC-6).
    # Anything else is refused by the service below, with its reason.
    if not await run_in_threadpool(_owned_by, state, workspace_id, daemon_id, actor_id):
        return
    answer = await state.hub.ask_daemon(workspace_id, daemon_id, request)
    if answer is not None and not answer.get("ok", True):
        raise ResourceError(f"{prefix}{answer.get('error') or 'the daemon refused this path'}", status=422)
