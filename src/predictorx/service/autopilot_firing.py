"""One firing of an autopilot, in the caller's transaction: claim its slot, file the issue, assign
it, start the workflow, and keep it in the history; and what its run's end means for the
autopilot (consecutive failures pause it and tell its owner).

The claim is the firing row itself: (autopilot, slot) is unique, and it is inserted first, with
ON CONFLICT DO NOTHING. Two server replicas firing the same due time race on that insert; on
PostgreSQL the second insert waits for the first transaction and then inserts nothing, on SQLite
the write transactions are serialised — either way the slot fires once, durably (a restarted replica
finds the row), on both databases, with no lock held between transactions. (A PostgreSQL advisory
lock would serialise the replicas too, but guards only while held: it would still need a record
of fired slots, which is this row.)
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from ..errors import ClientError
from ..store.autopilot_schema import Autopilot, AutopilotFiring
from ..store.schema import Task, new_id, utcnow
from . import audit
from . import autopilot_payload as payload
from . import autopilots, issues, tasks
from .errors import Invalid

log = logging.getLogger("predictorx.autopilot")
ENDED = ("completed", "failed", "cancelled")


def claim(session: Session, row: Autopilot, *, slot: str, trigger: str, due_at: datetime | None,
          payload_text: str | None = None, replay_of: str | None = None,
          now: datetime | None = None) -> AutopilotFiring | None:
    """The firing row for `slot`, or None: the slot was fired already (by this or another replica).
    One `INSERT … ON CONFLICT DO NOTHING` (SQLite and PostgreSQL alike): no savepoint, and on
    PostgreSQL it waits for another transaction inserting the same slot, then does nothing."""
    values = {"id": new_id(), "autopilot_id": row.id, "workspace_id": row.workspace_id, "slot": slot[:220],
              "trigger": trigger, "due_at": due_at, "fired_at": now or utcnow(), "outcome": "running",
              "payload": payload_text, "replay_of": replay_of}
    dialect_insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = dialect_insert(AutopilotFiring).values(**values).on_conflict_do_nothing(
        index_elements=["autopilot_id", "slot"]).returning(AutopilotFiring.id)
    if session.execute(statement).first() is None:  # (psycopg's rowcount here is -1: RETURNING says)
        return None
    return session.get(AutopilotFiring, values["id"])


def claim_many(session: Session, due: list[tuple[Autopilot, str, datetime]], now: datetime,
               trigger: str = "cron") -> dict[str, AutopilotFiring]:
    """`claim` for many (autopilot, slot, due time) at once — one multi-row INSERT … ON CONFLICT DO
    NOTHING RETURNING, the ORM objects straight from it: the firing rows claimed, by autopilot id
    (a slot fired already is not among them)."""
    if not due:
        return {}
    values = [{"id": new_id(), "autopilot_id": row.id, "workspace_id": row.workspace_id, "slot": slot[:220],
               "trigger": trigger, "due_at": due_at, "fired_at": now, "outcome": "running", "payload": None,
               "replay_of": None} for row, slot, due_at in due]
    dialect_insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = dialect_insert(AutopilotFiring).on_conflict_do_nothing(
        index_elements=["autopilot_id", "slot"]).returning(AutopilotFiring)
    return {f.autopilot_id: f for f in session.scalars(statement, values)}


def file_at_once(session: Session, filing: list[tuple[Autopilot, AutopilotFiring, int]]) -> None:
    """`fire` for a batch the caller rolls back whole on any error (then fires one by one): no
    savepoint, each issue number taken beforehand (issues.reserve_numbers), refusals raised, and
    the runs the issues queued looked up once for all of them."""
    filed = [(row, firing, _file(session, row, firing, number)) for row, firing, number in filing]
    active: dict[str, Task] = {}
    for t in session.scalars(select(Task).where(Task.issue_id.in_([issue.id for _, _, issue in filed]),
                                                Task.active_key.is_not(None)).order_by(Task.created_at)):
        active.setdefault(t.issue_id, t)
    for row, firing, issue in filed:
        _filed(row, firing, issue, active.get(issue.id))


def fire(session: Session, row: Autopilot, firing: AutopilotFiring) -> AutopilotFiring:
    """File the issue (and start the workflow) for a claimed firing. A refusal — the agent gone,
    no agent in the role, the workflow unknown — is the firing's failure, recorded, not raised."""
    try:
        with session.begin_nested():
            _file_issue(session, row, firing)
    except ClientError as e:
        _failed(session, row, firing, e.message)
    except Exception as e:  # a firing must never stop the scheduler; it counts as a failure
        log.exception("autopilot %s: firing %s failed", row.id, firing.id)
        _failed(session, row, firing, f"an internal error ({type(e).__name__})")
    session.flush()
    return firing


def _file_issue(session: Session, row: Autopilot, firing: AutopilotFiring) -> None:
    issue = _file(session, row, firing)
    active = [t for t in tasks.list_for_issue(session, issue) if t.active_key is not None]
    _filed(row, firing, issue, active[0] if active else None)


def _file(session: Session, row: Autopilot, firing: AutopilotFiring, number: int | None = None) -> Any:
    known = payload.values(row.name, firing.trigger, firing.due_at or firing.fired_at, row.timezone, firing.id)
    issue = issues.create_issue(session, row.workspace_id, row.owner_id, title=payload.title(row.title_template, known),
                                body=payload.render(row.body_template, known, firing.payload),
                                project_id=row.project_id, number=number)
    agent_name = _assignee(session, row, issue)
    if agent_name:
        issues.assign(session, issue, agent_name)
    if row.workflow:
        _start_workflow(session, row.workflow, issue)
    return issue


def _filed(row: Autopilot, firing: AutopilotFiring, issue: Any, run: Task | None) -> None:
    """The firing's record of the issue it filed and the run that issue queued (if any)."""
    firing.issue_id, firing.issue_number = issue.id, issue.number
    firing.task_id = run.id if run else None
    firing.outcome = "running" if run else "created"
    firing.detail = f"issue #{issue.number} filed" + (f", run {run.id[:8]} queued" if run else "")
    if run is None:
        row.failures = 0


def _assignee(session: Session, row: Autopilot, issue: Any) -> str | None:
    if not row.assignee or not row.assignee.startswith(autopilots.ROLE_PREFIX):
        return row.assignee
    from .workflow_roles import agents_for

    role = row.assignee[len(autopilots.ROLE_PREFIX):]
    found = [a for a in agents_for(session, issue, role) if a.archived_at is None]
    if not found:
        raise Invalid(f"no agent holds the role {role!r} in the autopilot's project "
                      "(`predictorx workflow bind PROJECT ROLE AGENT`)")
    return found[0].id


def _start_workflow(session: Session, process: str, issue: Any) -> None:
    from . import workflow_instances, workflow_interaction
    from .workflow_actions import library
    from .workflow_dispatch import after_change

    lib = library()
    inst, created = workflow_instances.start(session, lib, issue, process)
    if created:
        if issue.assignee_type == "agent":
            workflow_interaction.enter(session, issue, issue.assignee_id, inst, lib)
        after_change(session, lib, issue, inst)


def _failed(session: Session, row: Autopilot, firing: AutopilotFiring, why: str) -> None:
    firing.outcome, firing.detail = "failed", why[:500]
    count_failure(session, row, why)


def count_failure(session: Session, row: Autopilot, why: str) -> None:
    """One more consecutive failure; at the autopilot's limit it pauses itself and tells its owner
    (an audit event naming the owner; the reason is on its page and in `autopilot show`)."""
    row.failures += 1
    if row.paused or row.failures < row.failure_limit:
        return
    reason = f"paused itself after {row.failures} consecutive failed firings or runs; the last: {why}"
    autopilots.pause(session, row, reason)
    audit.record(session, workspace_id=row.workspace_id, actor_id=None, action="autopilot.paused",
                 target=f"autopilot:{row.id}", detail={"name": row.name, "owner_id": row.owner_id,
                                                       "reason": reason[:300]})


def settle(session: Session) -> int:
    """Firings whose run has ended take its outcome: a completed run resets the failure count, a
    failed or cancelled one adds to it. How many were settled."""
    rows = session.execute(
        select(AutopilotFiring, Task.status, Task.failure_reason)
        .join(Task, Task.id == AutopilotFiring.task_id)
        .where(AutopilotFiring.outcome == "running", Task.status.in_(ENDED))
        .order_by(AutopilotFiring.fired_at)).all()
    for firing, status, reason in rows:
        row = session.get(Autopilot, firing.autopilot_id)
        if status == "completed":
            firing.outcome = "succeeded"
            if row is not None:
                row.failures = 0
            continue
        firing.outcome = "failed"
        firing.detail = f"run {status}" + (f": {reason}" if reason else "")
        firing.detail = firing.detail[:500]
        if row is not None:
            count_failure(session, row, firing.detail)
    session.flush()
    return len(rows)


def has_running(session: Session) -> bool:
    return session.scalar(select(AutopilotFiring.id).where(AutopilotFiring.outcome == "running").limit(1)) is not None
