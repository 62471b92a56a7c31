"""The autopilot use cases as `/api/autopilots`, `predictorx autopilot` and the /autopilots page
call them (issue 27 §5): each opens its own transaction and answers a plain dict. Changes are
audited; a signing secret is in the answer of create and rotate-url only."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from ..store.schema import utcnow
from . import audit
from . import autopilot_firing as firing
from . import autopilots as svc
from .transactions import Transactions


def list_autopilots(tx: Transactions, workspace_id: str, base_url: str = "") -> list[dict[str, Any]]:
    with tx.read() as s:
        return [svc.describe(s, row, base_url=base_url) for row in svc.list_all(s, workspace_id)]


def choices(tx: Transactions, workspace_id: str) -> dict[str, Any]:
    """What a new autopilot may name (the /autopilots form's lists): the workspace's agents and
    projects, and the processes of the workflow library (none when it does not load)."""
    from .agents import list_agents
    from .errors import Invalid
    from .projects import list_projects
    from .workflow_actions import library

    try:
        workflows = sorted(library().processes)
    except Invalid:  # (the form still makes autopilots without a workflow)
        workflows = []
    with tx.read() as s:
        return {"agents": sorted(a.name for a in list_agents(s, workspace_id)),
                "projects": [{"id": p.id, "name": p.title} for p in list_projects(s, workspace_id, by_title=True)],
                "workflows": workflows}


def show(tx: Transactions, workspace_id: str, ref: str, base_url: str = "") -> dict[str, Any]:
    with tx.read() as s:
        return svc.describe(s, svc.get(s, workspace_id, ref), base_url=base_url, history=True)


def _audit(s: Any, row: Any, action: str, user_id: str | None, address: str | None, **detail: Any) -> None:
    audit.record(s, workspace_id=row.workspace_id, actor_id=user_id, action=f"autopilot.{action}",
                 target=f"autopilot:{row.id}", detail={"name": row.name, **detail}, address=address)


def create(tx: Transactions, workspace_id: str, user_id: str | None, fields: dict[str, Any], base_url: str = "", *,
           address: str | None = None, now: datetime | None = None) -> dict[str, Any]:
    """`now`: the scheduler's clock (server/autopilot_clock.py), from which the first due time counts."""
    with tx.write() as s:
        row, secret = svc.create(s, workspace_id, user_id, fields, now)
        _audit(s, row, "create", user_id, address, cron=row.cron, webhook=row.hook_id is not None)
        out = svc.describe(s, row, base_url=base_url)
        out["signing_secret"] = secret
        return out


def reschedule(tx: Transactions, workspace_id: str, ref: str, user_id: str | None, cron: str | None,
               timezone: str | None, base_url: str = "", *, address: str | None = None,
               now: datetime | None = None) -> dict[str, Any]:
    """Change its schedule (cron, time zone); `now`: the scheduler's clock."""
    with tx.write() as s:
        row = svc.get(s, workspace_id, ref)
        before = {"cron": row.cron, "timezone": row.timezone}
        svc.reschedule(s, row, cron, timezone, now)
        _audit(s, row, "reschedule", user_id, address, before=before, cron=row.cron, timezone=row.timezone)
        return svc.describe(s, row, base_url=base_url)


def pause(tx: Transactions, workspace_id: str, ref: str, user_id: str | None, *, address: str | None = None) -> dict:
    with tx.write() as s:
        row = svc.get(s, workspace_id, ref)
        svc.pause(s, row, "paused by a person")
        _audit(s, row, "pause", user_id, address)
        return svc.describe(s, row)


def resume(tx: Transactions, workspace_id: str, ref: str, user_id: str | None, *, address: str | None = None,
           now: datetime | None = None) -> dict:
    with tx.write() as s:
        row = svc.get(s, workspace_id, ref)
        svc.resume(s, row, now)
        _audit(s, row, "resume", user_id, address)
        return svc.describe(s, row)


def remove(tx: Transactions, workspace_id: str, ref: str, user_id: str | None, *, address: str | None = None) -> dict:
    with tx.write() as s:
        row = svc.get(s, workspace_id, ref)
        _audit(s, row, "remove", user_id, address)
        svc.remove(s, row)
        return {"removed": row.name}


def rotate_url(tx: Transactions, workspace_id: str, ref: str, user_id: str | None, base_url: str = "", *,
               address: str | None = None) -> dict[str, Any]:
    """A new webhook URL and signing secret; the old URL answers 404 from now on."""
    with tx.write() as s:
        row = svc.get(s, workspace_id, ref)
        secret = svc.new_hook(row)
        _audit(s, row, "rotate_url", user_id, address)
        out = svc.describe(s, row, base_url=base_url)
        out["signing_secret"] = secret
        return out


def fire_now(tx: Transactions, workspace_id: str, ref: str, user_id: str | None, *,
             address: str | None = None, now: datetime | None = None) -> dict[str, Any]:
    """A person fires it by hand (paused or not): a firing of its own, due now."""
    with tx.write() as s:
        row = svc.get(s, workspace_id, ref)
        now = now or utcnow()
        claimed = firing.claim(s, row, slot=f"manual:{uuid.uuid4()}", trigger="manual", due_at=now, now=now)
        assert claimed is not None  # a fresh slot
        firing.fire(s, row, claimed)
        _audit(s, row, "fire", user_id, address, firing=claimed.id)
        return svc.describe_firing(claimed)


def replay(tx: Transactions, workspace_id: str, firing_id: str, user_id: str | None, *,
           address: str | None = None) -> dict[str, Any]:
    """Fire again as that firing did — its due time and its webhook payload — as a new firing
    (a new issue), kept in the history with what it replays."""
    with tx.write() as s:
        original = svc.get_firing(s, workspace_id, firing_id)
        row = svc.get(s, workspace_id, original.autopilot_id)
        claimed = firing.claim(s, row, slot=f"replay:{uuid.uuid4()}", trigger="replay", due_at=original.due_at,
                               payload_text=original.payload, replay_of=original.id)
        assert claimed is not None
        firing.fire(s, row, claimed)
        _audit(s, row, "replay", user_id, address, firing=claimed.id, replay_of=original.id)
        return svc.describe_firing(claimed)
