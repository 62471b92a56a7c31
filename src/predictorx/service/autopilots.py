"""Autopilots themselves (issue 27 §5): made, described, paused, resumed, removed, their webhook
URL rotated. Firing them is service/autopilot_firing.py; the scheduler's side autopilot_schedule.py;
the inbound webhook autopilot_webhook.py."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.autopilot_schema import Autopilot, AutopilotFiring
from ..store.schema import User, new_id, utcnow
from . import autopilot_cron as cron
from . import autopilot_payload as payload
from . import events, secretbox
from .agents import find_agent
from .errors import Conflict, Invalid, NotFound
from .projects import get_project

HOOK_PATH = "/api/autopilot-hooks/"
ROLE_PREFIX = "role:"
HISTORY = 50


def changed(session: Session, workspace_id: str) -> None:
    """Tell every server process's scheduler to look again (server/autopilot_scheduler.py)."""
    events.emit(session, workspace_id, "autopilots_changed")


def get(session: Session, workspace_id: str, ref: str) -> Autopilot:
    found = session.get(Autopilot, ref)
    if found is None or found.workspace_id != workspace_id:
        found = session.scalar(select(Autopilot).where(Autopilot.workspace_id == workspace_id, Autopilot.name == ref))
    if found is None:
        raise NotFound(f"autopilot {ref!r} not found; `predictorx autopilot list` shows them")
    return found


def list_all(session: Session, workspace_id: str) -> list[Autopilot]:
    return list(session.scalars(select(Autopilot).where(Autopilot.workspace_id == workspace_id)
                                .order_by(Autopilot.name)))


def _check_assignee(session: Session, workspace_id: str, assignee: str | None, project_id: str | None) -> str | None:
    if not assignee:
        return None
    if assignee.startswith(ROLE_PREFIX):
        if not assignee[len(ROLE_PREFIX):].strip():
            raise Invalid("a role assignee is role:<name>, e.g. role:reviewer")
        if not project_id:
            raise Invalid("a role is resolved in a project: give --project with a role assignee")
        return assignee
    return find_agent(session, workspace_id, assignee).name


def _check_workflow(process: str | None) -> str | None:
    if not process:
        return None
    from .workflow_actions import library

    if library().model_of(process) is None:
        raise NotFound(f"no workflow {process!r} in the library; `predictorx workflow processes` lists them")
    return process


def new_hook(row: Autopilot) -> str:
    """A fresh URL and signing secret (the old URL answers 404 from now on); the secret, once."""
    row.hook_id = secrets.token_urlsafe(24)
    secret = "whsec_" + secrets.token_urlsafe(32)
    secretbox.seal_into(row, "hook_secret_sealed", secret)
    return secret


def create(session: Session, workspace_id: str, owner_id: str | None, fields: dict[str, Any],
           now: datetime | None = None) -> tuple[Autopilot, str | None]:
    """The autopilot and, if it has a webhook, its signing secret (shown this once)."""
    name = fields["name"].strip()
    if session.scalar(select(Autopilot.id).where(Autopilot.workspace_id == workspace_id, Autopilot.name == name)):
        raise Conflict(f"an autopilot named {name!r} exists already")
    project_id = get_project(session, workspace_id, fields["project"]).id if fields.get("project") else None
    tz = fields.get("timezone") or "UTC"
    expression = cron.check(fields["cron"], tz) if fields.get("cron") else None
    if not expression and not fields.get("webhook"):
        raise Invalid("an autopilot needs a trigger: a cron schedule, a webhook, or both")
    path, value = payload.parse_filter(fields.get("filter"))
    if path and not fields.get("webhook"):
        raise Invalid("a payload filter needs a webhook")
    # (the id first: sealing binds the secret to its row's key)
    row = Autopilot(id=new_id(), workspace_id=workspace_id, name=name, owner_id=owner_id, project_id=project_id,
                    title_template=payload.check_template(fields["title"], title=True),
                    body_template=payload.check_template(fields.get("description") or "", title=False),
                    workflow=_check_workflow(fields.get("workflow")),
                    assignee=_check_assignee(session, workspace_id, fields.get("assignee"), project_id),
                    cron=expression, timezone=tz, filter_path=path, filter_value=value,
                    failure_limit=fields.get("failure_limit") or 5, failures=0, paused=False)
    if expression:
        row.next_due_at = cron.next_due(expression, tz, now or utcnow())
    secret = new_hook(row) if fields.get("webhook") else None
    session.add(row)
    session.flush()
    changed(session, workspace_id)
    return row, secret


def reschedule(session: Session, row: Autopilot, expression: str | None, tz: str | None,
               now: datetime | None = None) -> None:
    """A new cron schedule and/or time zone (`expression` None: the one it has; empty: no schedule —
    then it needs its webhook). The next due time counts from `now`; slots of the old schedule that
    did not come are not fired."""
    tz = tz or row.timezone
    expression = row.cron if expression is None else expression.strip()
    text = cron.check(expression, tz) if expression else None
    if not text and not row.hook_id:
        raise Invalid("an autopilot needs a trigger: without a schedule it would have none (it has no webhook)")
    cron.zone(tz)
    row.cron, row.timezone = text, tz
    row.next_due_at = cron.next_due(text, tz, now or utcnow()) if text else None
    changed(session, row.workspace_id)


def pause(session: Session, row: Autopilot, reason: str, now: datetime | None = None) -> None:
    row.paused, row.pause_reason, row.paused_at = True, reason[:500], now or utcnow()
    changed(session, row.workspace_id)


def resume(session: Session, row: Autopilot, now: datetime | None = None) -> None:
    """Running again from now: due times that passed while paused are not fired."""
    row.paused, row.pause_reason, row.paused_at, row.failures = False, None, None, 0
    if row.cron:
        row.next_due_at = cron.next_due(row.cron, row.timezone, now or utcnow())
    changed(session, row.workspace_id)


def remove(session: Session, row: Autopilot) -> None:
    session.delete(row)
    changed(session, row.workspace_id)


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def describe_firing(f: AutopilotFiring) -> dict[str, Any]:
    return {"id": f.id, "trigger": f.trigger, "due_at": _when(f.due_at), "fired_at": _when(f.fired_at),
            "issue_id": f.issue_id, "issue_number": f.issue_number, "task_id": f.task_id, "outcome": f.outcome,
            "detail": f.detail, "replay_of": f.replay_of, "has_payload": f.payload is not None}


def describe(session: Session, row: Autopilot, *, base_url: str = "", history: bool = False) -> dict[str, Any]:
    owner = session.get(User, row.owner_id) if row.owner_id else None
    out: dict[str, Any] = {
        "id": row.id, "name": row.name, "owner": owner.name if owner else None, "project_id": row.project_id,
        "title": row.title_template, "description": row.body_template, "workflow": row.workflow,
        "assignee": row.assignee, "cron": row.cron, "timezone": row.timezone, "next_due_at": _when(row.next_due_at),
        "webhook_url": f"{base_url}{HOOK_PATH}{row.hook_id}" if row.hook_id else None,
        "filter": f"{row.filter_path}={row.filter_value}" if row.filter_path else None,
        "paused": row.paused, "pause_reason": row.pause_reason, "paused_at": _when(row.paused_at),
        "failures": row.failures, "failure_limit": row.failure_limit, "created_at": _when(row.created_at)}
    if history:
        rows = session.scalars(select(AutopilotFiring).where(AutopilotFiring.autopilot_id == row.id)
                               .order_by(AutopilotFiring.fired_at.desc()).limit(HISTORY))
        out["firings"] = [describe_firing(f) for f in rows]
    return out


def get_firing(session: Session, workspace_id: str, firing_id: str) -> AutopilotFiring:
    found = session.get(AutopilotFiring, firing_id)
    if found is None or found.workspace_id != workspace_id:
        raise NotFound(f"firing {firing_id!r} not found; `predictorx autopilot show NAME` lists the firings")
    return found
