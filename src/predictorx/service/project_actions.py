"""Saving projects and their resources — create, change and delete a project; add, change and
remove a resource — one use case each, called alike by the API (server/routes/projects.py) and the
pages (server/web/projects.py, resources.py, folders.py), so a rule the API applies applies on the
page too. Saving a machine-local resource first asks its daemon (daemon_check.py), so those are
async; their database work runs where the caller says (`offload`: the API's thread pool or the
pages' own) and answers the API's JSON.
"""

from __future__ import annotations

from typing import Any

from .. import resources as registry
from . import forgepolicy
from . import projects as svc
from . import serialize
from .daemon_check import DaemonAsker, Offload, check_with_daemon
from .transactions import Transactions


async def create_project(tx: Transactions, daemons: DaemonAsker, offload: Offload, workspace_id: str,
                         user_id: str | None, fields: dict[str, Any], resources: list[dict[str, Any]]) -> dict:
    """One transaction (R-RES-5): an invalid resource aborts the whole creation. `fields`: title,
    description, status, priority, lead_id."""
    for i, r in enumerate(resources):
        await check_with_daemon(tx, daemons, offload, workspace_id, r["resource_type"], r.get("resource_ref"),
                                f"resource {i + 1}: ", actor_id=user_id)

    def work() -> dict:
        with tx.write() as s:
            p = svc.create_project(s, workspace_id, user_id, **fields, resources=resources)
            return serialize.project(p, svc.list_resources(s, p.id))
    return await offload(work)


def update_project(tx: Transactions, workspace_id: str, project_id: str, changes: dict[str, Any]) -> dict:
    """title, description, status, priority, lead_id and forge_policy (only its given settings;
    forgepolicy.py) — one transaction, so one bad value aborts the whole update."""
    changes = dict(changes)
    policy = changes.pop("forge_policy", None)
    with tx.write() as s:
        p = svc.get_project(s, workspace_id, project_id)
        if policy is not None:
            forgepolicy.set_policy(p, policy)
        svc.update_project(s, p, **{k: v for k, v in changes.items() if v is not None})
        return serialize.project(p, svc.list_resources(s, p.id))


def delete_project(tx: Transactions, workspace_id: str, project_id: str) -> None:
    with tx.write() as s:
        svc.delete_project(s, workspace_id, project_id)


async def add_resource(tx: Transactions, daemons: DaemonAsker, offload: Offload, workspace_id: str,
                       user_id: str | None, project_id: str, resource: dict[str, Any]) -> dict:
    """`resource`: resource_type, resource_ref, label, position (as ResourceIn has them)."""
    await check_with_daemon(tx, daemons, offload, workspace_id, resource["resource_type"],
                            resource.get("resource_ref"), actor_id=user_id)

    def work() -> dict:
        with tx.write() as s:
            p = svc.get_project(s, workspace_id, project_id)
            row = svc.add_resource(s, p, user_id, resource_type=resource["resource_type"],
                                   resource_ref=resource.get("resource_ref"), label=resource.get("label"),
                                   position=resource.get("position"))
            return serialize.resource(row)
    return await offload(work)


async def update_resource(tx: Transactions, daemons: DaemonAsker, offload: Offload, workspace_id: str,
                          user_id: str | None, project_id: str, resource_id: str, patch: dict[str, Any]) -> dict:
    """A partial update (omitted fields kept, null ones cleared); a changed payload is checked by
    its daemon first."""
    def current() -> tuple[str, dict]:
        with tx.read() as s:
            row = svc.get_resource(s, svc.get_project(s, workspace_id, project_id), resource_id)
            return row.resource_type, row.resource_ref
    rtype, ref = await offload(current)
    merged = registry.merge_patch(ref, {k: v for k, v in (patch.get("resource_ref") or {}).items() if k != "label"})
    if merged != ref:
        await check_with_daemon(tx, daemons, offload, workspace_id, rtype, merged, actor_id=user_id)

    def work() -> dict:
        with tx.write() as s:
            p = svc.get_project(s, workspace_id, project_id)
            return serialize.resource(svc.update_resource(s, p, resource_id, patch, actor_id=user_id))
    return await offload(work)


def remove_resource(tx: Transactions, workspace_id: str, project_id: str, resource_id: str) -> None:
    with tx.write() as s:
        svc.remove_resource(s, svc.get_project(s, workspace_id, project_id), resource_id)
