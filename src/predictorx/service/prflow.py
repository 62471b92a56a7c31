"""The pull-request use cases as the API routes, the pages and the CLI reach them (issue 22 §3, §6):
by task or by PR, answering plain dicts. A task whose branch is not on a forge yet is pushed first
(service/forgepush.py asks its daemon) and its PR opens when the push lands; a local folder with
no forge is merged or discarded in place by its daemon.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from .. import steptimes
from ..store.schema import ForgeConnection, PullRequest, Task, User
from . import forgefeedback, forgepush, issues
from . import pullrequests as prs
from .pullrequests import announce
from . import tasks as task_svc
from .errors import Conflict, Forbidden, NotFound

log = logging.getLogger("predictorx.forges")

#: Tasks whose person asked for a PR before the branch was pushed: opened when the push lands,
#: whatever the project's auto_pr says. (In this process; a restart forgets it and the person
#: presses again — the open is idempotent.)
_open_when_pushed: set[str] = set()
_lock = threading.Lock()


def of_task_id(s: Session, workspace_id: str, task_id: str) -> PullRequest | None:
    return prs.of_task(s, task_svc.get_task(s, workspace_id, task_id))


def of_issue(s: Session, workspace_id: str, ref: str) -> list[PullRequest]:
    return prs.for_issue(s, issues.get_issue(s, workspace_id, ref).id)


def panel_row(s: Session, pr: PullRequest) -> dict[str, Any]:
    """A PR as the pages' panel shows it: the row, the merge methods its repository allows, and
    which forge connection it is on (its name, or "(removed)")."""
    conn = s.get(ForgeConnection, pr.connection_id)
    return {"pr": pr, "methods": prs.allowed_merge_methods(pr), "forge": conn.name if conn else "(removed)",
            "kind": conn.kind if conn else ""}


def _out(db: prs.Transactions, workspace_id: str, pr_id: str, **extra: Any) -> dict[str, Any]:
    with db.read() as s:
        return {**prs.serialize(prs.get(s, workspace_id, pr_id)), **extra}


def open_for_task(db: prs.Transactions, workspace_id: str, task_id: str, link_base: str | None = None) -> dict[str, Any]:
    with db.write() as s:
        task = task_svc.get_task(s, workspace_id, task_id)
        pr = prs.of_task(s, task)
        if pr is None or (pr.head_sha is None and pr.number is None):
            if task.status != "completed":
                raise Conflict(f"this run is {task.status}; a pull request opens for a completed run's branch")
            if not task.branch_name:
                raise Conflict("this run left no branch (no changes), so there is nothing to open a pull request for")
            with _lock:
                _open_when_pushed.add(task.id)
            forgepush.request_push(s, task)
            return {"pushing": True, "task_id": task.id}
        pr_id = pr.id
    return _out(db, workspace_id, prs.open_pr(db, workspace_id, pr_id, link_base=link_base))


def _open_wanted(session: Session, pr: PullRequest, task: Task) -> bool:
    """After a push landed: is its PR to be opened (the person asked for it, or the policy says
    auto_pr, and it is not open yet)?"""
    with _lock:
        asked = task.id in _open_when_pushed
        _open_when_pushed.discard(task.id)
    return pr.number is None and pr.state in ("pushed",) + prs.OPEN_STATES \
        and (asked or bool(prs.policy_of(session, pr)["auto_pr"]))


def opened_after_push(db: prs.Transactions, workspace_id: str, pr_id: str, plan: prs.OpenPlan,
                      branch_created: bool = False, task_id: str = "") -> None:
    """Open the PR of a push that landed, with the plan read in the push's transaction. Runs
    after that transaction committed (it calls the forge). `branch_created`: that push created
    the branch (no PR of it can be open yet)."""
    steptimes.mark(task_id, "s_open_start")
    try:
        prs.open_pr(db, workspace_id, pr_id, branch_created=branch_created, plan=plan)
        steptimes.mark(task_id, "s_open_written")
    except Exception as e:  # noqa: BLE001 — a background open must not take the push report down
        log.warning("opening the pull request of %s failed: %s", pr_id, e)
        prs.note(db, workspace_id, pr_id, f"Opening the pull request failed: {getattr(e, 'message', e)}")


def _actor_named(db: prs.Transactions, actor: prs.Actor) -> prs.Actor:
    if actor.name or not actor.user_id:
        return actor
    with db.read() as s:
        user = s.get(User, actor.user_id)
        return prs.Actor(actor.user_id, user.name if user is not None else "", actor.role, actor.address)


def merge_pr(db: prs.Transactions, workspace_id: str, pr_id: str, actor: prs.Actor, method: str | None) -> dict[str, Any]:
    return _out(db, workspace_id, prs.merge(db, workspace_id, pr_id, _actor_named(db, actor), method))


def discard_pr(db: prs.Transactions, workspace_id: str, pr_id: str, actor: prs.Actor) -> dict[str, Any]:
    _must_act(db, workspace_id, pr_id, actor)
    return _out(db, workspace_id, prs.discard(db, workspace_id, pr_id, actor))


def _must_act(db: prs.Transactions, workspace_id: str, pr_id: str, actor: prs.Actor) -> None:
    from ..store.schema import ForgeConnection

    with db.read() as s:
        pr = prs.get(s, workspace_id, pr_id)
        conn = s.get(ForgeConnection, pr.connection_id)
        if conn is None:
            raise NotFound("the forge connection of this pull request was removed")
        if not prs.may_merge(actor, conn):
            raise Forbidden(f"members may not discard through the connection {conn.name!r}; "
                            "an owner or admin can, or can allow members to")


def pr_id_of_task(db: prs.Transactions, workspace_id: str, task_id: str) -> str | None:
    """The id of the PR the task's work went to, or None (404 for no such task)."""
    with db.read() as s:
        pr = prs.of_task(s, task_svc.get_task(s, workspace_id, task_id))
        return pr.id if pr is not None else None


def ask_again(db: prs.Transactions, workspace_id: str, pr_id: str, user_id: str | None,
              request: str | None = None) -> dict[str, Any]:
    with db.write() as s:
        pr = prs.get(s, workspace_id, pr_id)
        user = s.get(User, user_id) if user_id else None
        task = forgefeedback.ask_again(s, pr, user.name if user is not None else "A person", request)
        out = prs.serialize(pr)
        out["queued_task_id"] = task.id if task is not None else None
        return out


# -- opening on push ---------------------------------------------------------------------------

#: The server's transactions, for work that runs after a push report's transaction committed
#: (server/app.py binds them at start; None: no server in this process, nothing opens on push).
_bound: prs.Transactions | None = None


def bind(db: prs.Transactions | None) -> None:
    global _bound
    _bound = db


#: session.info key: a PR opened on the forge before the push report's transaction (`report_push`),
#: as (task id, prs.Opened) — written by `_after_push` in that transaction.
OPENED_AHEAD = "px.pr_opened_ahead"
#: The longest a push report waits for the forge to open its PR ahead of the report's transaction:
#: a slower forge does not hold the daemon's report (nor its delivery) up to the forge's timeout;
#: the PR is then opened after the commit (adopting one the slow call made meanwhile).
OPEN_AHEAD_WAIT = 5.0
_ahead = ThreadPoolExecutor(4, thread_name_prefix="px-open-ahead")


def report_push(db: prs.Transactions, daemon_id: str, task_id: str, *, ok: bool, sha: str | None,
                error: str | None, branch: dict[str, Any] | None = None, result: str | None = None) -> str | None:
    """A daemon's push report (POST /api/daemon/tasks/{id}/forge-push); the PR row's id or None.

    When the push landed and its PR is to open (auto_pr, or a person asked, and not open yet) the
    PR is opened on the forge first — planned in a short read transaction, the forge called with
    none open — and then the push and the PR's number are written in one transaction. Before, the
    push was recorded first and the PR opened after that commit, its number written in a second
    write transaction: the forge now sees the PR a write transaction sooner (a read comes before
    its POST instead), the pages after as many transactions as before (a read and a write instead
    of two writes). Whatever is not opened ahead (the forge refused, was down or slower than
    OPEN_AHEAD_WAIT, a PR row in another state, a task this daemon did not run) takes that path
    still (`_after_push`)."""
    opened = _opened_ahead(db, daemon_id, task_id, branch, result) if ok and sha else None
    with db.write() as s:
        if opened is not None:
            s.info[OPENED_AHEAD] = (task_id, opened)
        pr = forgepush.push_reported(s, daemon_id, task_id, ok=ok, sha=sha, error=error, result=result,
                                     branch=branch)
        return pr.id if pr is not None else None


def _opened_ahead(db: prs.Transactions, daemon_id: str, task_id: str, branch: dict[str, Any] | None,
                  result: str | None) -> prs.Opened | None:
    """The PR of a push report, opened on the forge before the report is written, or None. Its
    plan is the one read while the daemon pushed (`plan_ahead`) when that is there, else read now."""
    try:
        planned = _take_planned(daemon_id, task_id, branch, result) or _read_plan(db, daemon_id, task_id, branch,
                                                                                 result)
        if planned is None:
            return None
        steptimes.mark(task_id, "s_open_start")
        return _ahead.submit(prs.open_on_forge, *planned).result(OPEN_AHEAD_WAIT)
    except Exception as e:  # noqa: BLE001 — the push is recorded whatever; the PR opens after its commit then
        log.info("the pull request of task %s opens after its push is recorded (%s)", task_id, e)
        return None


def _read_plan(db: prs.Transactions, daemon_id: str, task_id: str, branch: dict[str, Any] | None,
               result: str | None, *, running: bool = False) -> tuple[prs.OpenPlan, bool] | None:
    """The plan to open the PR of the task's pushed branch and whether the push creates the branch,
    read in a short read transaction (nothing is written); None when no PR is to open (`running`:
    or the task is not running). NotFound when the task is not this daemon's or its branch is on
    no forge."""
    with db.read() as s:
        task, review, (conn, repo_path, url, pr) = forgepush.reported_branch(s, daemon_id, task_id, branch)
        if running and task.status != "running":
            return None
        if pr is not None and (pr.number is not None or pr.state not in ("pushed",) + prs.OPEN_STATES):
            return None
        row = pr or PullRequest(workspace_id=task.workspace_id, issue_id=task.issue_id, agent_id=task.agent_id,
                                connection_id=conn.id, repo_path=repo_path, repo_url=url,
                                branch=review.get("branch"), state="pushed", task_id=task.id)
        with _lock:
            asked = task.id in _open_when_pushed
        if not (asked or prs.policy_of(s, row)["auto_pr"]):
            return None
        plan = prs.open_plan(s, row, result=result)  # `row` is never added: nothing is written here
        created = forgepush.creates_branch(review, pr)
    return None if plan is None else (plan, created)


# -- planned while the daemon pushes -------------------------------------------------------------

#: How long a plan read while its daemon pushed (`plan_ahead`) serves that push's report; a slower
#: push reads it again.
PLAN_KEEP = 10.0


@dataclass(frozen=True)
class _Planned:
    daemon_id: str
    branch: dict[str, Any] | None
    result: str | None
    plan: tuple[prs.OpenPlan, bool]
    at: float


#: Task id → the plan read for its push under way (in this process; taken by its report, or
#: dropped once older than PLAN_KEEP). It holds the connection's credential as a forge call's plan
#: does, no longer than that.
_planned: dict[str, _Planned] = {}


def plan_ahead(db: prs.Transactions, daemon_id: str, task_id: str, *, branch: dict[str, Any] | None,
               result: str | None) -> bool:
    """A daemon's push of the task's branch is under way (POST /api/daemon/tasks/{id}/pushing):
    the PR its report will open is planned now — read, nothing written — so that report goes
    straight to the forge. True when a PR is to open (and its plan is kept). NotFound for a task
    that is not this daemon's or whose branch is on no forge; False for one that is not running."""
    planned = _read_plan(db, daemon_id, task_id, branch, result, running=True) if branch else None
    now = time.monotonic()
    with _lock:
        for stale in [k for k, v in _planned.items() if now - v.at > PLAN_KEEP]:
            del _planned[stale]
        if planned is None:
            _planned.pop(task_id, None)
            return False
        _planned[task_id] = _Planned(daemon_id, branch, result, planned, now)
    return True


def _take_planned(daemon_id: str, task_id: str, branch: dict[str, Any] | None,
                  result: str | None) -> tuple[prs.OpenPlan, bool] | None:
    """The plan `plan_ahead` read for this push, if it was for the same daemon, branch and result
    and is younger than PLAN_KEEP; it is taken either way."""
    with _lock:
        planned = _planned.pop(task_id, None)
    if planned is None or time.monotonic() - planned.at > PLAN_KEEP:
        return None
    same = (planned.daemon_id, planned.branch, planned.result) == (daemon_id, branch, result)
    return planned.plan if same else None


def _after_push(session: Session, pr: PullRequest, task: Task) -> None:
    """forgepush's listener: a PR opened ahead of this transaction (`report_push`) is written
    here; otherwise, once the push's transaction commits, the PR is opened in a thread of its own
    (a forge call never runs inside a transaction, nor in the daemon's report request)."""
    forgefeedback.forget_stale_checks(pr)  # the push moved the head
    announce(session, pr)
    ahead = session.info.pop(OPENED_AHEAD, None)
    if ahead is not None and ahead[0] == task.id:
        with _lock:
            _open_when_pushed.discard(task.id)
        prs.record_opened(session, pr, ahead[1])
        return
    db, ws, pr_id = _bound, pr.workspace_id, pr.id
    pushed = (task.review or {}).get("pushed") if isinstance(task.review, dict) else None
    created = bool(isinstance(pushed, dict) and pushed.get("created"))
    if db is None or not _open_wanted(session, pr, task):
        return
    try:  # read here: the open's thread needs no transaction of its own
        plan = prs.open_plan(session, pr)
    except (Conflict, NotFound) as e:
        log.warning("not opening the pull request of %s: %s", pr_id, e)
        return
    if plan is None:
        return

    def start(_session: Session) -> None:
        threading.Thread(target=opened_after_push, args=(db, ws, pr_id, plan, created, task.id),
                         name="px-open-pr", daemon=True).start()

    event.listen(session, "after_commit", start, once=True)


forgepush.after_push.append(_after_push)
