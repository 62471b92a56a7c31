"""Tasks: queueing, atomic claims, lifecycle, messages, cancellation and the sweeper.

Claims are atomic on both backends: SQLite serialises writers with BEGIN IMMEDIATE (see
store.db), PostgreSQL skips rows another claimer holds (FOR UPDATE SKIP LOCKED) and locks the
agent rows it counts concurrency against, so no task is ever handed out twice.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, cast

from sqlalchemy import Table, and_, bindparam, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from ..store.schema import (
    ACTIVE_STATUSES,
    HOLDING_STATUSES,
    TERMINAL_STATUSES,
    Agent,
    Daemon,
    Issue,
    Runtime,
    PullRequest,
    Task,
    TaskMessage,
    one_of,
    utcnow,
)
from . import budgets, claiming, runnability
from .errors import Conflict, Forbidden, Invalid, NotFound
from ..protocol import MESSAGE_KINDS, Event  # the wire's names: event types, message kinds (R-EX-3)
from .events import emit
from .finishing import finish_held
from .permissions import asks_or_answers

#: Statuses that count toward an agent's max_concurrent_tasks.
HOLDING = HOLDING_STATUSES
MAX_ATTEMPTS = 3


def lease_duration() -> timedelta:
    """The prepare lease: a dispatched task not started or extended by then goes back to the queue."""
    return timedelta(seconds=float(os.environ.get("PREDICTORX_TASK_LEASE", "60")))


def _active_key(agent_id: str, issue_id: str) -> str:
    return f"{agent_id}:{issue_id}"


# -- queueing ---------------------------------------------------------------------------------

def enqueue(session: Session, issue: Issue, agent: Agent, *, new_issue: bool = False) -> Task:
    """At most one active task per (agent, issue): an existing one is returned, not duplicated.
    An archived agent is given no work. `new_issue`: the issue was made in this transaction and
    has no task yet (nothing to look for)."""
    if agent.archived_at is not None:
        raise Conflict(f"agent {agent.name} is archived: restore it (`predictorx agent restore {agent.name}`, or "
                       "Restore on the Agents page) to give it work")
    key = _active_key(agent.id, issue.id)
    existing = None if new_issue else session.scalar(select(Task).where(Task.active_key == key))
    if existing is not None:
        return existing
    # The owner's runtimes, read once for both the wait reason and the event (the event's own
    # lookup of the agent's runtime was a second SELECT: the rows read here were already gone).
    pairs = runnability.owners_runtimes(session, agent)
    task = Task(workspace_id=issue.workspace_id, issue_id=issue.id, agent_id=agent.id,
                project_id=issue.project_id, status="queued", active_key=key,
                wait_reason=runnability.agent_blocker(session, agent, pairs))
    session.add(task)
    session.flush()
    emit(session, issue.workspace_id, Event.TASK_QUEUED, task_id=task.id, owner_id=agent.owner_id,
         **who_may_take(session, agent, [rt for rt, _ in pairs]))
    return task


def who_may_take(session: Session, agent: Agent, known: Sequence[Runtime] = ()) -> dict[str, Any]:
    """What a task_queued event says of the daemons that may claim `agent`'s task (claiming.py's
    rule): the one its runtime is on, if it is bound to one, else those with its provider. The hub
    wakes one of them first (server/hub.py): waking one that may not take it cost the task a delay.
    `known`: runtimes the caller read already (the agent's among them needs no query)."""
    if agent.runtime_id is not None:
        runtime = next((rt for rt in known if rt.id == agent.runtime_id), None) or session.get(Runtime, agent.runtime_id)
        if runtime is not None:
            return {"provider": agent.provider, "runtime_daemon_id": runtime.daemon_id}
    return {"provider": agent.provider}


def follow_up(session: Session, issue: Issue, agent: Agent, request: str) -> Task:
    """Ask `agent` for more on `issue` (R-EX-10): a new task with `request` as its prompt, or — the
    agent already has one there — the request joins it (queued: into its prompt; under way: kept
    for the follow-up queued when it ends)."""
    existing = session.scalar(select(Task).where(Task.active_key == _active_key(agent.id, issue.id))
                              .with_for_update(of=Task) if _lock(session) else
                              select(Task).where(Task.active_key == _active_key(agent.id, issue.id)))
    if existing is None:
        task = enqueue(session, issue, agent)
        task.prompt = request
        task.pull_request_id = task.pull_request_id or _open_pull_request(session, issue, agent)
        return task
    if existing.status == "queued":
        existing.prompt = _joined(existing.prompt, request)
    else:
        existing.pending_prompt = _joined(existing.pending_prompt, request)
    return existing


def _open_pull_request(session: Session, issue: Issue, agent: Agent) -> str | None:
    """The agent's open (or pushed, not yet opened) PR on the issue: a request for more work there
    continues its branch, so its commits update the same PR (issue 22 §5)."""
    return session.scalar(select(PullRequest.id).where(
        PullRequest.issue_id == issue.id, PullRequest.agent_id == agent.id,
        one_of(PullRequest.state, ("pushed", "open", "draft"))).order_by(PullRequest.created_at.desc()).limit(1))


def _joined(before: str | None, more: str) -> str:
    return f"{before}\n\n---\n\n{more}" if before else more


def _queue_pending(session: Session, task: Task) -> None:
    """Requests that arrived while `task` was under way become the agent's next task on the issue."""
    request, task.pending_prompt = task.pending_prompt, None
    issue, agent = session.get(Issue, task.issue_id), session.get(Agent, task.agent_id)
    if issue is None or agent is None:
        return
    session.flush()  # the finished task's active_key is gone before the next one claims it
    nxt = follow_up(session, issue, agent, request)
    if task.pull_request_id and nxt.pull_request_id is None:  # a PR's follow-up continues its branch
        nxt.pull_request_id = task.pull_request_id


def _announce_queued(session: Session, task: Task, *, with_id: bool = True) -> None:
    """Tell the daemons that may take `task` (its agent's owner's, server/hub.py) to look."""
    agent = session.get(Agent, task.agent_id)
    emit(session, task.workspace_id, Event.TASK_QUEUED, **({"task_id": task.id} if with_id else {}),
         owner_id=agent.owner_id if agent is not None else None,
         **(who_may_take(session, agent) if agent is not None and with_id else {}))


def _lock(session: Session) -> bool:
    """Row locks where they exist (PostgreSQL); SQLite's BEGIN IMMEDIATE already serialises writers."""
    return session.bind.dialect.name == "postgresql"


def get_task(session: Session, workspace_id: str, task_id: str, *, for_update: bool = False) -> Task:
    t = session.get(Task, task_id, with_for_update=for_update and _lock(session))
    if t is None or t.workspace_id != workspace_id:
        raise NotFound(f"task {task_id!r} not found; `predictorx issue runs <issue>` lists an issue's tasks")
    return t


def agent_and_issue(session: Session, task: Task) -> tuple[Agent | None, Issue | None]:
    """The rows a task's answer names: its agent and its issue."""
    return session.get(Agent, task.agent_id), session.get(Issue, task.issue_id)


def list_for_issue(session: Session, issue: Issue) -> list[Task]:
    return list(session.scalars(select(Task).where(Task.issue_id == issue.id).order_by(Task.created_at)))


def runs_of_issue(session: Session, issue: Issue) -> list[tuple[Task, Agent | None]]:
    """list_for_issue with each task's agent, in one statement (the runs list read each agent after)."""
    return [(t, a) for t, a in session.execute(select(Task, Agent).outerjoin(Agent, Agent.id == Task.agent_id)
                                               .where(Task.issue_id == issue.id).order_by(Task.created_at))]


def list_tasks(session: Session, workspace_id: str, *, project_id: str | None = None,
               status: str | None = None, limit: int = 200) -> list[Task]:
    q = select(Task).where(Task.workspace_id == workspace_id)
    if project_id:
        q = q.where(Task.project_id == project_id)
    if status:
        q = q.where(Task.status == status)
    return list(session.scalars(q.order_by(Task.created_at.desc()).limit(limit)))


# -- claiming ---------------------------------------------------------------------------------

def claim(session: Session, daemon: Daemon, *, limit: int = 1, task_id: str | None = None) -> list[dict[str, Any]]:
    """`claim_as` for a loaded daemon."""
    return claim_as(session, daemon.id, daemon.workspace_id, limit=limit, task_id=task_id)


def claim_as(session: Session, daemon_id: str, workspace_id: str, *, limit: int = 1,
             task_id: str | None = None) -> list[dict[str, Any]]:
    """Hand this daemon up to `limit` queued tasks it can run. Each is returned with its context,
    its agent and a task-scoped token (R-EX-4); task, agent and issue are what the statements
    returned (attribute access, as serialize reads them), not ORM objects.

    One statement selects, locks and marks (R-SC-2): `UPDATE task … WHERE id IN (SELECT … FOR
    UPDATE SKIP LOCKED) RETURNING …`, with the agents already at their limit left out inside
    it, so concurrent claimers never wait on each other's rows. Then one count of the claimed
    agents' held tasks hands back what went past an agent's limit (several of its tasks in one
    claim, or — on PostgreSQL — a concurrent claim: there the count runs under the agents' row
    locks, taken in id order, so it sees every committed claim; SQLite's BEGIN IMMEDIATE already
    serialises claimers). The statements are Core, built once (service/claiming.py)."""
    session.flush()  # what this transaction changed through the ORM (a finish) counts in the claim
    held = budgets.blocks(session, workspace_id)  # None, unless a hard budget is reached (issue 27)
    if held is not None:
        budgets.hold_queued(session, workspace_id, held)
        if held.workspace:
            return []
    return claiming.claim(session, daemon_id, workspace_id, limit=limit, task_id=task_id, lease=lease_duration(),
                          refuse=_refuse, held=held)


def _refuse(session: Session, task: Task, reason: str) -> None:
    """A claimed task this daemon cannot run as asked ends cancelled, saying why (R-RES-9)."""
    _finish(session, task, "cancelled", failure_reason=reason)


def refuse_claimed(session: Session, task_id: str, reason: str) -> None:
    """`_refuse` for a task of a claim being answered (its variables cannot be opened: agentenv)."""
    task = session.get(Task, task_id, populate_existing=True)
    if task is not None:
        _refuse(session, task, reason)


# -- lifecycle reported by the daemon ---------------------------------------------------------

def _owned(session: Session, daemon_id: str, task_id: str) -> Task:
    task = session.get(Task, task_id, with_for_update=_lock(session))
    daemon = session.get(Daemon, daemon_id)
    if task is None or daemon is None or task.workspace_id != daemon.workspace_id:
        raise NotFound(f"task {task_id!r} not found")  # another workspace's task: 404, not 403 (R-SEC-2)
    if task.daemon_id != daemon_id:
        raise Forbidden(f"task {task_id} is not held by this daemon")
    return task


def _finish(session: Session, task: Task, status: str, *, failure_reason: str | None = None) -> None:
    was_holding_a_slot = task.status in HOLDING
    task.status = status
    task.active_key = None
    task.lease_expires_at = None
    task.finished_at = utcnow()
    task.wait_reason = None  # a finished task waits for nothing; its page must not say it does
    if failure_reason is not None:
        task.failure_reason = failure_reason
    if status in ("cancelled", "failed"):
        _put_issue_back(session, task)
    emit(session, task.workspace_id, Event.TASK_CHANGED, task_id=task.id, status=status)
    if task.pending_prompt:
        if status == "cancelled":  # stopping the work stops what was asked of it meanwhile
            task.pending_prompt = None
        else:
            _queue_pending(session, task)
    if was_holding_a_slot and session.scalar(
            select(Task.id).where(Task.agent_id == task.agent_id, Task.status == "queued").limit(1)):
        # The agent's concurrency limit may have held these back; daemons should look again.
        _announce_queued(session, task, with_id=False)


def report_status(session: Session, daemon_id: str, task_id: str, *, status: str,
                  wait_reason: str | None = None, branch_name: str | None = None) -> Task:
    """running / waiting_local_directory while the task is alive. A cancelled task stays cancelled."""
    task = _owned(session, daemon_id, task_id)
    if status not in ("running", "waiting_local_directory"):
        raise Invalid("status must be running or waiting_local_directory; finish a task with /finish")
    if branch_name is not None:
        task.branch_name = branch_name
    if task.status in TERMINAL_STATUSES:
        return task
    task.status = status
    task.wait_reason = wait_reason if status == "waiting_local_directory" else None
    task.lease_expires_at = None  # past the prepare lease: heartbeats keep it alive now
    if status == "running" and task.started_at is None:
        task.started_at = utcnow()
        with session.no_autoflush:  # the task's changes go out in one UPDATE at the end, not two
            issue_status = session.scalar(select(Issue.status).where(Issue.id == task.issue_id))
        if issue_status in ("backlog", "todo"):
            task.issue_status_before = issue_status
        _move_issue(session, task, ("backlog", "todo"), "in_progress")
    emit(session, task.workspace_id, Event.TASK_CHANGED, task_id=task.id, status=status)
    return task


def finish(session: Session, daemon_id: str, task_id: str, *, status: str, result: str | None = None,
           session_id: str | None = None, failure_reason: str | None = None,
           branch_name: str | None = None, review: dict[str, Any] | None = None) -> Task:
    if status not in TERMINAL_STATUSES:
        raise Invalid(f"status must be one of {', '.join(TERMINAL_STATUSES)}")
    if review is not None:
        review = _bounded_review(review)
    # The common case in one Core statement (service/finishing.py); the rules below for the rest.
    fields: dict[str, Any] = {"result": result, "session_id": session_id or None, "failure_reason": failure_reason,
                              "review": review}
    fields = {k: v for k, v in fields.items() if v is not None}
    if branch_name is not None:
        fields["branch_name"] = branch_name or None
    held = finish_held(session, daemon_id, task_id, status, fields)
    if held is not None:
        row, agent_has_queued, owner_id, issue_moved = held
        emit(session, row.workspace_id, Event.TASK_CHANGED, task_id=row.id, status=status)
        if status in ("cancelled", "failed"):
            _put_issue_back(session, row)
        elif status == "completed" and not issue_moved:
            _move_issue(session, row, ("in_progress",), "in_review")  # a person closes it, never the agent
        if agent_has_queued:  # its slot is free: the agent's limit may have held these back
            emit(session, row.workspace_id, Event.TASK_QUEUED, owner_id=owner_id)
        return row
    task = _owned(session, daemon_id, task_id)
    task.result = result if result is not None else task.result
    task.session_id = session_id or task.session_id
    if branch_name is not None:
        task.branch_name = branch_name or None
    if review is not None:
        task.review = review
    if task.status in TERMINAL_STATUSES:  # cancelled (or swept) meanwhile: keep what the user saw
        if failure_reason and not task.failure_reason:
            task.failure_reason = failure_reason
        return task
    if task.started_at is None and status == "completed":
        task.started_at = task.dispatched_at
    task.wait_reason = None
    _finish(session, task, status, failure_reason=failure_reason)
    if status == "completed":
        _move_issue(session, task, ("in_progress",), "in_review")  # a person closes it, never the agent
    return task


REVIEW_MAX_BYTES = 1_500_000


def _bounded_review(review: dict[str, Any]) -> dict[str, Any]:
    """What a daemon says about the work, kept within a size a page can show: past it the
    patch is dropped (the file list stays) and the review says so."""
    import json

    if len(json.dumps(review, default=str)) <= REVIEW_MAX_BYTES:
        return review
    kept = {k: v for k, v in review.items() if k != "patch"}
    kept["files"] = (kept.get("files") or [])[:2000] if isinstance(kept.get("files"), list) else []
    kept["truncated"] = True
    kept["patch"] = ""
    return kept if len(json.dumps(kept, default=str)) <= REVIEW_MAX_BYTES else {"truncated": True, "patch": ""}


def _put_issue_back(session: Session, task: Task) -> None:
    """A run that moved its issue to in_progress and then failed or was cancelled puts the issue
    back where it was — unless another run of the issue is still going (it then stays in
    progress) or a person moved the issue meanwhile (the conditional UPDATE leaves it)."""
    if not task.issue_status_before:
        return
    others = select(Task.id).where(Task.issue_id == task.issue_id, Task.id != task.id,
                                   Task.status.in_(ACTIVE_STATUSES)).limit(1)
    if session.scalar(others) is None:
        _move_issue(session, task, ("in_progress",), task.issue_status_before)


_issue = Issue.__table__
_MOVES: dict[tuple[str, ...], Any] = {}  # per list of statuses it moves from (a handful, fixed)


def _move_statement(from_statuses: tuple[str, ...]) -> Any:
    stmt = _MOVES.get(from_statuses)
    if stmt is None:
        stmt = _MOVES[from_statuses] = (update(_issue)
                                        .where(_issue.c.id == bindparam("m_issue"), one_of(_issue.c.status, from_statuses))
                                        .values(status=bindparam("m_to"), updated_at=bindparam("m_now")))
    return stmt


def _move_issue(session: Session, task: Task, from_statuses: tuple[str, ...], to: str) -> None:
    """Move the issue along with its agent's work, never back and never past a person's choice.
    One conditional UPDATE (Core, built once): no read, and no race with a person changing the
    status meanwhile."""
    session.connection().execute(_move_statement(from_statuses),
                                 {"m_issue": task.issue_id, "m_to": to, "m_now": utcnow()})


def append_messages(session: Session, task: Task, messages: list[dict[str, Any]]) -> int:
    """Idempotent on (task, seq): a retried batch inserts nothing twice. Returns the highest seq."""
    rows = []
    for m in messages:
        seq, kind = m.get("seq"), m.get("kind")
        if not isinstance(seq, int) or seq < 0:
            raise Invalid("every message needs an integer seq >= 0")
        if kind not in MESSAGE_KINDS:
            raise Invalid(f"message kind must be one of {', '.join(MESSAGE_KINDS)}")
        content = m.get("content")
        if not isinstance(content, dict):
            raise Invalid("message content must be a JSON object")
        rows.append({"task_id": task.id, "seq": seq, "kind": kind, "content": content, "created_at": utcnow()})
    if not rows:
        return task.message_seq
    from ..store.schema import new_id

    for r in rows:
        r["id"] = new_id()
    session.execute(_message_insert(session.get_bind().dialect.name), rows)
    task.message_seq = max(task.message_seq, max(r["seq"] for r in rows))
    emit(session, task.workspace_id, Event.TASK_MESSAGES, task_id=task.id, seq=task.message_seq)
    if asks_or_answers(messages):  # a question or its answer: the run's header and lists change too
        emit(session, task.workspace_id, Event.TASK_CHANGED, task_id=task.id, status=task.status)
    return task.message_seq


@functools.cache
def _message_insert(dialect: str) -> Any:
    """The insert of a batch's messages, built once per dialect and executed with the list of rows
    (executemany), on the table: the ORM insert with the rows inlined compiled again on every
    batch (issue 30). A message already stored (a retried batch) is skipped."""
    table = cast(Table, TaskMessage.__table__)
    return (pg_insert if dialect == "postgresql" else sqlite_insert)(table).on_conflict_do_nothing(
        index_elements=["task_id", "seq"])


def list_messages(session: Session, task: Task, after: int = -1, limit: int = 1000) -> list[TaskMessage]:
    return list(session.scalars(select(TaskMessage).where(TaskMessage.task_id == task.id, TaskMessage.seq > after)
                                .order_by(TaskMessage.seq).limit(limit)))


def latest_messages(session: Session, task: Task, before: int | None = None,
                    limit: int = 200) -> tuple[list[TaskMessage], bool]:
    """The last `limit` messages (before seq `before`), in order, and whether earlier ones exist."""
    q = select(TaskMessage).where(TaskMessage.task_id == task.id)
    if before is not None:
        q = q.where(TaskMessage.seq < before)
    rows = list(session.scalars(q.order_by(TaskMessage.seq.desc()).limit(limit + 1)))
    more = len(rows) > limit
    return list(reversed(rows[:limit])), more


def cancel(session: Session, task: Task, reason: str = "cancelled by a user") -> Task:
    """Immediate for the user; a daemon holding the task is told and kills the agent (R-EX-5)."""
    if task.status in TERMINAL_STATUSES:
        raise Conflict(f"task {task.id} already {task.status}")
    task.cancel_requested = True
    _finish(session, task, "cancelled", failure_reason=reason)
    if task.daemon_id:
        emit(session, task.workspace_id, Event.TASK_CANCELLED, task_id=task.id, daemon_id=task.daemon_id)
    return task


def rerun(session: Session, task: Task) -> Task:
    """Queue the same agent on the same issue again (an active run of the pair is returned)."""
    if task.status not in TERMINAL_STATUSES:
        raise Conflict("this run is still going; cancel it first to run it again")
    issue = session.get(Issue, task.issue_id)
    agent = session.get(Agent, task.agent_id)
    if issue is None or agent is None:
        raise Invalid("its issue or its agent was deleted; assign the issue to an agent instead")
    if issue.status in ("done", "cancelled"):
        raise Conflict(f"issue #{issue.number} is {issue.status}; reopen it before running it again")
    return enqueue(session, issue, agent)


def heartbeat(session: Session, daemon: Daemon, task_ids: list[str], grace: timedelta) -> list[str]:
    """Extend the leases of the daemon's live tasks; answer which of them were cancelled.

    A heartbeat lists every task the daemon holds. A task this daemon was given over `grace` ago
    that it no longer lists is one it lost (e.g. its end never reached us): re-queued if it never
    started, failed otherwise — never left `running` for ever."""
    now = utcnow()
    daemon.last_heartbeat_at = now
    held = set(task_ids)
    cancelled = []
    for t in session.scalars(select(Task).where(Task.daemon_id == daemon.id, or_(
            Task.id.in_(held), Task.status.in_(HOLDING)))):
        if t.id in held:
            if t.status in TERMINAL_STATUSES:
                cancelled.append(t.id)
            elif t.status == "dispatched":
                t.lease_expires_at = now + lease_duration()
        elif t.dispatched_at is not None and t.dispatched_at < now - grace:
            _lost(session, t, f"daemon {daemon.name} no longer holds the task")
    return cancelled


def release(session: Session, daemon_id: str, task_id: str) -> Task:
    """A daemon hands back a task it had not started (it is stopping): back to the queue."""
    task = _owned(session, daemon_id, task_id)
    if task.status in ("dispatched", "waiting_local_directory") and task.started_at is None:
        task.status, task.daemon_id, task.lease_expires_at, task.wait_reason = "queued", None, None, None
        _announce_queued(session, task)
    return task


def requeue_held(session: Session, daemon_id: str, why: str) -> list[Task]:
    """Everything a daemon holds goes back to the queue at once (its owner left): started runs
    too, since that daemon may no longer report on them; messages already received are kept."""
    out = []
    for task in session.scalars(select(Task).where(Task.daemon_id == daemon_id, Task.status.in_(ACTIVE_STATUSES[1:]))):
        task.status, task.daemon_id, task.runtime_id = "queued", None, None
        task.lease_expires_at, task.dispatched_at, task.started_at = None, None, None
        task.wait_reason = f"back in the queue: {why}"
        _announce_queued(session, task)
        out.append(task)
    return out


def orphaned_by_restart(session: Session, daemon: Daemon) -> list[Task]:
    """A daemon registering is a new process: what its previous process held is lost (R-EX-6)."""
    q = select(Task).where(Task.daemon_id == daemon.id, Task.status.in_(ACTIVE_STATUSES[1:]))
    out = []
    for task in session.scalars(q):
        _lost(session, task, f"daemon {daemon.name} restarted")
        out.append(task)
    return out


def _lost(session: Session, task: Task, why: str) -> None:
    """Re-queue a task that never started; fail one whose run was under way."""
    if task.status == "dispatched" and task.attempt < MAX_ATTEMPTS:
        task.status, task.daemon_id, task.lease_expires_at, task.wait_reason = "queued", None, None, None
        _announce_queued(session, task)
    else:
        _finish(session, task, "failed", failure_reason=(
            f"{why} while the task was {task.status}; the run was lost (messages already received "
            "are kept). Assign the issue again to retry."))


# -- the sweeper (R-EX-6) ---------------------------------------------------------------------

def _sweepable(daemon_timeout: timedelta) -> Any:
    """The tasks sweep() ends or re-queues: held by a silent daemon, or past their prepare lease."""
    now = utcnow()
    dead = select(Daemon.id).where(or_(Daemon.last_heartbeat_at.is_(None),
                                       Daemon.last_heartbeat_at < now - daemon_timeout))
    return select(Task).where(Task.status.in_(ACTIVE_STATUSES[1:]), or_(
        Task.daemon_id.in_(dead),
        and_(Task.status == "dispatched", Task.lease_expires_at < now)))


def sweep_due(session: Session, daemon_timeout: timedelta) -> bool:
    """Whether sweep() has anything to do: a read, so a server with nothing to sweep writes nothing
    (a write transaction every few seconds was most of an idle server's cost, issue 30)."""
    return session.scalar(select(_sweepable(daemon_timeout).exists())) or False


def sweep(session: Session, daemon_timeout: timedelta) -> list[Task]:
    """Re-queue tasks whose prepare lease ran out or whose daemon went silent before they started;
    fail the ones that had started on a daemon that went silent (their run is lost)."""
    q = _sweepable(daemon_timeout)
    if session.bind.dialect.name == "postgresql":
        q = q.with_for_update(skip_locked=True)
    swept = []
    for task in session.scalars(q):
        daemon = session.get(Daemon, task.daemon_id) if task.daemon_id else None
        _lost(session, task, f"{daemon.name if daemon else 'its daemon'} stopped heartbeating")
        swept.append(task)
    return swept
