"""Asking a task's daemon to merge or discard its branch in the person's folder, and waiting for
the answer (issue 22 §6): read what to ask, ask over the daemon's event stream (`hub.ask_daemon`),
record what it said — three steps, so no transaction stays open while the daemon works. The API
route and any page call this one function.
"""

from __future__ import annotations

from typing import Any

from fastapi.concurrency import run_in_threadpool

from ..service import forgepush
from ..service.errors import Conflict, Forbidden
from ..store.schema import Daemon
from .state import AppState


def _plan(state: AppState, workspace_id: str, user_id: str | None, task_id: str, op: str) -> tuple[str, dict, str]:
    with state.read() as s:
        daemon_id, request = forgepush.local_request(s, workspace_id, task_id, op)
        daemon = s.get(Daemon, daemon_id)
        # The folder is on its owner's machine: only they merge into it or delete its branches (R-SEC-6).
        if daemon is None or daemon.owner_id is None or daemon.owner_id != user_id:
            raise Forbidden("only the person whose machine holds the folder (the daemon's owner) may merge or "
                            "discard a branch there")
        return daemon_id, request, daemon.name


def _record(state: AppState, workspace_id: str, user_id: str | None, task_id: str, op: str,
            answer: dict[str, Any], address: str | None) -> dict[str, Any]:
    with state.write() as s:
        return forgepush.local_recorded(s, workspace_id, task_id, user_id, op, answer, address=address)


async def local_action(state: AppState, workspace_id: str, user_id: str | None, task_id: str, op: str,
                       timeout: float = forgepush.LOCAL_TIMEOUT, *, address: str | None = None) -> dict[str, Any]:
    """Merge (`local_merge`) or discard (`local_discard`) the task's branch where it lives; the
    result as recorded, or a ServiceError whose sentence says why not (the daemon's own refusal)."""
    daemon_id, request, name = await run_in_threadpool(_plan, state, workspace_id, user_id, task_id, op)
    if not state.hub.daemon_connected(daemon_id):
        raise Conflict(f"the daemon {name} that holds this folder is offline; start it "
                       "(`predictorx daemon start`) and try again — nothing was changed")
    answer = await state.hub.ask_daemon(workspace_id, daemon_id, request, timeout=timeout)
    if answer is None:
        raise Conflict(f"the daemon {name} did not answer within {timeout:.0f} s; whether it "
                       f"{'merged' if op == 'local_merge' else 'discarded'} the branch is not known — look at the "
                       "folder, then try again")
    if not answer.get("ok"):
        raise Conflict(answer.get("error") or "the daemon refused without saying why")
    return await run_in_threadpool(_record, state, workspace_id, user_id, task_id, op, answer, address)
