"""An issue's pull request on a forge (issue 22 §3, §6): open it once, merge or discard it through
the forge, and move the issue along with it.

Forge calls are network calls, so none runs inside a database transaction: each use case reads
what it needs in one short transaction, calls the forge with no transaction open, then writes
what the forge answered in another (re-reading the row, so a webhook that landed meanwhile is
not overwritten). The functions take the server's transactions (`Transactions`: AppState or a
Database) rather than one session for that reason.

One row per (issue, connection, repository, branch) is the table's own unique key; opening
twice returns the row's PR, and a PR someone opened on the forge for the same branch is adopted
(`find_pr` before `open_pr`), except right after a push that created the branch: no PR can be
open for a branch that did not exist, and should one appear meanwhile the forge refuses the
second and the refusal adopts it.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..forges import base as forge_api
from ..forges import registry
from ..store.workflow_schema import TaskHandoff
from ..store.schema import ForgeConnection, Issue, Project, ProjectResource, PullRequest, Task, utcnow
from . import audit, forgepolicy
from . import forges as connections
from .errors import Conflict, Forbidden, Invalid, NotFound
from ..protocol import Event
from .events import emit

#: What a PR body quotes of the run's result and handoff, at most (a forge caps bodies at 64 KiB).
BODY_PART_LIMIT = 12_000
OPEN_STATES = ("open", "draft")
#: How long opening a PR trusts a repository's default branch and merge methods read before
#: (one read per burst of runs on a repository, not one per PR; a merge always reads afresh).
REPO_INFO_SECONDS = 30.0
_repo_infos: dict[tuple[str, str], tuple[float, forge_api.RepoInfo]] = {}
_repo_infos_lock = threading.Lock()


class Transactions(Protocol):
    def read(self) -> AbstractContextManager[Session]: ...
    def write(self) -> AbstractContextManager[Session]: ...


@dataclass(frozen=True)
class Actor:
    """The person acting, as the route knows them: the merge rule needs their role."""

    user_id: str | None
    name: str
    role: str | None
    #: Where the request came from (the audit log's address).
    address: str | None = None


@dataclass(frozen=True)
class ForgeTarget:
    """What a forge call needs, read in a transaction and used after it closed."""

    forge: forge_api.Forge
    conn: forge_api.Connection
    repo: forge_api.RepoRef


# -- reading ---------------------------------------------------------------------------------

def get(session: Session, workspace_id: str, pr_id: str, *, for_update: bool = False) -> PullRequest:
    stmt = select(PullRequest).where(PullRequest.id == pr_id, PullRequest.workspace_id == workspace_id)
    if for_update and session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    row = session.scalar(stmt)
    if row is None:  # another workspace's too: no hint it exists (R-SEC-2)
        raise NotFound(f"pull request {pr_id} not found")
    return row


def of_task(session: Session, task: Task) -> PullRequest | None:
    """The PR a task's work went to: the one it continued, else the newest its push recorded,
    else the issue's row for the task's branch."""
    if task.pull_request_id:
        row = session.get(PullRequest, task.pull_request_id)
        if row is not None:
            return row
    row = session.scalar(select(PullRequest).where(PullRequest.task_id == task.id)
                         .order_by(PullRequest.created_at.desc()).limit(1))
    if row is None and task.branch_name:
        row = session.scalar(select(PullRequest).where(PullRequest.issue_id == task.issue_id,
                                                       PullRequest.branch == task.branch_name)
                             .order_by(PullRequest.created_at.desc()).limit(1))
    return row


def for_issue(session: Session, issue_id: str) -> list[PullRequest]:
    return list(session.scalars(select(PullRequest).where(PullRequest.issue_id == issue_id)
                                .order_by(PullRequest.created_at.desc())))


def target(session: Session, pr: PullRequest) -> ForgeTarget:
    row = session.get(ForgeConnection, pr.connection_id)
    if row is None:
        raise NotFound("the forge connection of this pull request was removed")
    return ForgeTarget(registry.get(row.kind), connections.connection_of(row), forge_api.RepoRef(pr.repo_path))


def policy_of(session: Session, pr: PullRequest) -> dict[str, Any]:
    issue = session.get(Issue, pr.issue_id)
    project = session.get(Project, issue.project_id) if issue is not None and issue.project_id else None
    return forgepolicy.policy_of(project) if project is not None else dict(forgepolicy.DEFAULTS)


def call(action: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """One forge call; a refusal or an unreachable forge becomes an answer with the forge's own
    sentence (422 / 502, service/forges.call_forge), never a 500."""
    return connections.call_forge(action, partial(fn, *args, **kwargs))


def allowed_merge_methods(pr: PullRequest) -> list[str]:
    """The methods the repository allows, as the last read of it found them (poll_state keeps
    them; "merge" until one was read)."""
    return list((pr.poll_state or {}).get("merge_methods") or ["merge"])


# -- issue transitions -------------------------------------------------------------------------

def _set_issue_status(session: Session, pr: PullRequest, to: str | None) -> None:
    issue = session.get(Issue, pr.issue_id)
    if issue is None or not to or issue.status == to:
        return
    issue.status = to
    issue.updated_at = utcnow()


def announce(session: Session, pr: PullRequest) -> None:
    """Tell the task and issue pages (server/hub.py → /api/events) that the PR changed. The
    pages refresh on events that name a task, so it names the PR's last task."""
    emit(session, pr.workspace_id, Event.PULL_REQUEST_CHANGED, task_id=pr.task_id, issue_id=pr.issue_id,
         pull_request_id=pr.id, state=pr.state)


def apply_remote(session: Session, pr: PullRequest, remote: forge_api.PullRequest, *,
                 merged_by_user_id: str | None = None, merged_by: str | None = None,
                 method: str | None = None) -> None:
    """Take the forge's word on the PR (a webhook, a poll, our own call) and move the issue:
    merged → the project's on_merge status (done or in_review); closed unmerged → back to where
    the issue was before the PR; reopened → in review again."""
    before = pr.state
    pr.number, pr.url = remote.number, remote.url or pr.url
    if remote.head_sha and remote.head_sha != pr.head_sha:
        pr.head_sha, pr.checks, pr.check_state = remote.head_sha, [], "none"
    pr.base_branch = remote.base_branch or pr.base_branch
    if before == "discarded" and remote.state in ("closed",):
        return
    pr.state = remote.state
    if remote.state == "merged" and before != "merged":
        pr.merged_at = pr.merged_at or utcnow()
        pr.merged_by = merged_by or remote.merged_by or pr.merged_by
        pr.merged_by_user_id = merged_by_user_id or pr.merged_by_user_id
        pr.merge_method = method or pr.merge_method
        pr.waiting_reason = None
        _set_issue_status(session, pr, policy_of(session, pr)["on_merge"])
    elif remote.state == "closed" and before != "closed":
        pr.waiting_reason = None
        _set_issue_status(session, pr, pr.issue_status_before)
    elif remote.state in OPEN_STATES and before not in OPEN_STATES:
        _mark_in_review(session, pr)
    announce(session, pr)


def _mark_in_review(session: Session, pr: PullRequest) -> None:
    issue = session.get(Issue, pr.issue_id)
    if issue is None:
        return
    task = session.get(Task, pr.task_id) if pr.task_id else None
    if pr.issue_status_before in (None, "in_progress", "in_review") and task is not None and task.issue_status_before:
        # Where the issue was before the agent's work moved it, so a closed PR returns it there
        # (the push recorded the status at its time: already moved by the run).
        pr.issue_status_before = task.issue_status_before
    elif pr.issue_status_before is None:
        pr.issue_status_before = issue.status
    _set_issue_status(session, pr, "in_review")


# -- opening -----------------------------------------------------------------------------------

def public_url() -> str:
    """Where the issue page lives, for the link in a PR body: PREDICTORX_PUBLIC_URL, else the
    server URL the configuration names, else a path alone."""
    from .. import config

    url = os.environ.get("PREDICTORX_PUBLIC_URL")
    if not url:
        try:
            url = config.client_config().server_url or ""
        except (OSError, ValueError):  # an unreadable client config only costs the host in a link
            url = ""
    return url.rstrip("/")


def _clip(text: str, limit: int = BODY_PART_LIMIT) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "\n\n… (cut; the whole is on the task page)"


def pr_body(session: Session, pr: PullRequest, issue: Issue, link_base: str, result: str | None = None) -> str:
    """The run's result (`result`: as its push report carries it, before the task row has it) and
    handoff, and a link back to the issue page."""
    task = session.get(Task, pr.task_id) if pr.task_id else None
    parts = []
    result = result or (task.result if task is not None else None)
    if result:
        parts.append("## What the agent did\n\n" + _clip(result))
    handoff = session.get(TaskHandoff, task.id) if task is not None else None
    content = handoff.content if handoff is not None and isinstance(handoff.content, dict) else {}
    for key, heading in (("done", "Done"), ("open_questions", "Open questions"), ("next_step", "Next step")):
        value = content.get(key)
        if value:
            text = "\n".join(f"- {v}" for v in value) if isinstance(value, list) else str(value)
            parts.append(f"## {heading}\n\n" + _clip(text, 4000))
    link = f"{link_base}/issues/{issue.number}"
    parts.append(f"---\nPredictor X issue [#{issue.number} {issue.title}]({link})"
                 + (f", run [{task.id[:8]}]({link_base}/tasks/{task.id})" if task is not None else ""))
    return "\n\n".join(parts)


@dataclass(frozen=True)
class OpenPlan:
    """What opening a PR sends the forge, read in a transaction (`open_plan`) and used after it."""

    where: ForgeTarget
    branch: str
    base_hint: str | None
    title: str
    body: str
    draft: bool
    info_key: tuple[str, str]


def open_plan(s: Session, pr: PullRequest, link_base: str | None = None, result: str | None = None) -> OpenPlan | None:
    """The plan to open `pr` on its forge, or None when it is open already. `pr` may be a row not
    written yet (a push report read ahead, service/prflow.py); `result`: the run's, when its task
    row does not hold it yet."""
    if pr.number is not None and pr.state != "discarded":
        return None
    if pr.state == "discarded":
        raise Conflict("this branch was discarded; run the agent again for a new one")
    where = target(s, pr)
    issue = s.get(Issue, pr.issue_id)
    if issue is None:
        raise NotFound("the issue of this branch was deleted")
    project = s.get(Project, issue.project_id) if issue.project_id else None
    return OpenPlan(where, pr.branch, pr.base_branch or _default_branch_hint(s, project, pr.repo_path), issue.title,
                    pr_body(s, pr, issue, link_base if link_base is not None else public_url(), result),
                    bool(policy_of(s, pr)["draft"]), (pr.connection_id, pr.repo_path))


def open_pr(db: Transactions, workspace_id: str, pr_id: str, *, link_base: str | None = None,
            branch_created: bool = False, plan: OpenPlan | None = None) -> str:
    """Open the PR of a pushed branch (idempotent); returns the row's id. A PR for the branch
    that already exists on the forge (opened by anyone) is adopted, not duplicated.
    `branch_created`: the push that just landed created the branch (see the module); `plan`:
    read already, in the transaction that recorded that push (one transaction fewer)."""
    if plan is None:
        with db.read() as s:
            plan = open_plan(s, get(s, workspace_id, pr_id), link_base)
            if plan is None:
                return pr_id
    opened = open_on_forge(plan, branch_created)
    with db.write() as s:
        pr = get(s, workspace_id, pr_id, for_update=True)
        record_opened(s, pr, opened)
        return pr.id


@dataclass(frozen=True)
class Opened:
    """What the forge answered to opening a PR (`open_on_forge`), to be written (`record_opened`)."""

    made: forge_api.PullRequest
    info: forge_api.RepoInfo


def open_on_forge(plan: OpenPlan, branch_created: bool = False) -> Opened:
    """The forge calls of opening a PR, no transaction open: the repository's default branch and
    merge methods (cached), the PR for the branch if one is open (not after a push that created
    the branch), else a new one. Raises Conflict / ForgeCallFailed with the forge's sentence."""
    where, branch, info_key = plan.where, plan.branch, plan.info_key
    info, made = _cached_repo_info(info_key), None
    if info is None and not branch_created:
        with ThreadPoolExecutor(2, thread_name_prefix="px-forge") as pool:  # two independent reads at once
            repo_read = pool.submit(_repo_info, where, info_key)
            made = _find_open(where, branch)
            info = repo_read.result()
    elif info is None:
        info = _repo_info(where, info_key)
    elif not branch_created:
        made = _find_open(where, branch)
    if made is None:
        try:
            made = where.forge.open_pr(where.conn, where.repo, head_branch=branch,
                                       base_branch=plan.base_hint or info.default_branch,
                                       title=plan.title, body=plan.body, draft=plan.draft)
        except forge_api.ForgeRefused as e:
            made = _find_open(where, branch)  # opened meanwhile (a second click, a webhook race)
            if made is None:
                raise Conflict(f"opening the pull request: the forge refused — {e}") from None
        except forge_api.ForgeUnavailable as e:
            raise connections.ForgeCallFailed(f"opening the pull request: the forge could not be reached — {e}",
                                              502) from None
    return Opened(made, info)


def record_opened(s: Session, pr: PullRequest, opened: Opened) -> None:
    """The forge's answer to opening `pr`, on its row (unless a webhook gave it a number first)."""
    if pr.number is None:
        pr.poll_state = {**(pr.poll_state or {}), "merge_methods": list(opened.info.merge_methods)}
        apply_remote(s, pr, opened.made)


def _cached_repo_info(key: tuple[str, str]) -> forge_api.RepoInfo | None:
    with _repo_infos_lock:
        at, info = _repo_infos.get(key, (0.0, None))
    return info if info is not None and time.monotonic() - at < REPO_INFO_SECONDS else None


def _repo_info(where: ForgeTarget, key: tuple[str, str]) -> forge_api.RepoInfo:
    info: forge_api.RepoInfo = call("reading the repository", where.forge.repo, where.conn, where.repo)
    with _repo_infos_lock:
        _repo_infos[key] = (time.monotonic(), info)
    return info


def _find_open(where: ForgeTarget, branch: str) -> forge_api.PullRequest | None:
    found = call("looking for the pull request", where.forge.find_pr, where.conn, where.repo, branch)
    return found if found is not None and found.state in OPEN_STATES else None


def _default_branch_hint(session: Session, project: Project | None, repo_path: str) -> str | None:
    """The project's default branch hint for this repository (a github_repo resource's
    `default_branch_hint`; the resource naming this repository first, else any with a hint)."""
    if project is None:
        return None
    hints = []
    for r in session.scalars(select(ProjectResource).where(ProjectResource.project_id == project.id)
                             .order_by(ProjectResource.position)):
        ref = r.resource_ref if isinstance(r.resource_ref, dict) else {}
        hint = ref.get("default_branch_hint")
        if isinstance(hint, str) and hint:
            url = str(ref.get("url") or "").removesuffix("/").removesuffix(".git")
            hints.append((not url.endswith("/" + repo_path), hint))
    return min(hints)[1] if hints else None


# -- merging and discarding --------------------------------------------------------------------

def may_merge(actor: Actor, conn_row: ForgeConnection) -> bool:
    """Owners and admins always; members only where the connection's owner allowed it (§7)."""
    return connections.may_merge(conn_row, actor.role)


def merge(db: Transactions, workspace_id: str, pr_id: str, actor: Actor, method: str | None = None) -> str:
    """Merge through the forge with the expected head; the forge enforces branch protection and
    required checks, and a refusal is kept on the row (shown on the pages) and raised with the
    forge's own sentence."""
    with db.read() as s:
        pr = get(s, workspace_id, pr_id)
        conn_row = s.get(ForgeConnection, pr.connection_id)
        if conn_row is None:
            raise NotFound("the forge connection of this pull request was removed")
        if not may_merge(actor, conn_row):
            raise Forbidden(f"members may not merge through the connection {conn_row.name!r}; "
                            "an owner or admin can, or can allow members to")
        if pr.state not in OPEN_STATES or pr.number is None:
            raise Conflict(f"this pull request is {pr.state if pr.number else 'not opened yet'}; only an open one merges")
        where, number, head_sha, draft = target(s, pr), pr.number, pr.head_sha or "", pr.state == "draft"
    info = call("reading the repository", where.forge.repo, where.conn, where.repo)
    allowed = list(info.merge_methods) or ["merge"]
    chosen = method or allowed[0]
    if chosen not in allowed:
        raise Invalid(f"the repository allows merging by {', '.join(allowed)}, not {chosen}")
    try:
        if draft:  # forges refuse to merge a draft: a person pressing Merge means it is ready
            where.forge.mark_ready(where.conn, where.repo, number)
        merged = where.forge.merge(where.conn, where.repo, number, method=chosen, head_sha=head_sha)  # type: ignore[arg-type]
    except forge_api.ForgeRefused as e:
        note(db, workspace_id, pr_id, f"The forge refused the merge: {e}")
        raise Conflict(f"the forge refused the merge: {e}") from None
    except forge_api.ForgeUnavailable as e:
        raise connections.ForgeCallFailed(f"merging: the forge could not be reached — {e}", 502) from None
    remote = call("reading the merged pull request", where.forge.get_pr, where.conn, where.repo, number)
    with db.write() as s:
        pr = get(s, workspace_id, pr_id, for_update=True)
        pr.poll_state = {**(pr.poll_state or {}), "merge_methods": allowed}
        if remote.state != "merged":  # some forges answer before the PR reads as merged
            remote = forge_api.PullRequest(**{**remote.__dict__, "state": "merged"})
        apply_remote(s, pr, remote, merged_by_user_id=actor.user_id, merged_by=actor.name, method=merged.method)
        audit.record(s, workspace_id=workspace_id, actor_id=actor.user_id, action="merge",
                     target=f"{pr.repo_path}#{number}",
                     detail={"pull_request_id": pr.id, "branch": pr.branch, "method": merged.method, "where": "forge"},
                     address=actor.address)
        return pr.id


def note(db: Transactions, workspace_id: str, pr_id: str, reason: str) -> None:
    with db.write() as s:
        pr = get(s, workspace_id, pr_id, for_update=True)
        pr.waiting_reason = reason
        announce(s, pr)


def discard(db: Transactions, workspace_id: str, pr_id: str, actor: Actor) -> str:
    """Close the PR (if one is open) and delete the branch on the forge; the issue returns to
    where it was before the PR."""
    with db.read() as s:
        pr = get(s, workspace_id, pr_id)
        if pr.state in ("merged", "discarded"):
            raise Conflict(f"this pull request is already {pr.state}")
        where, number, state, branch = target(s, pr), pr.number, pr.state, pr.branch
    if number is not None and state in OPEN_STATES:
        call("closing the pull request", where.forge.close_pr, where.conn, where.repo, number)
    call("deleting the branch", where.forge.delete_branch, where.conn, where.repo, branch)
    with db.write() as s:
        pr = get(s, workspace_id, pr_id, for_update=True)
        if pr.state != "merged":
            pr.state, pr.waiting_reason = "discarded", None
            _set_issue_status(s, pr, pr.issue_status_before)
            announce(s, pr)
        return pr.id


# -- answers ------------------------------------------------------------------------------------

def serialize(pr: PullRequest) -> dict[str, Any]:
    return {"id": pr.id, "issue_id": pr.issue_id, "task_id": pr.task_id, "agent_id": pr.agent_id,
            "connection_id": pr.connection_id, "repo": pr.repo_path, "branch": pr.branch,
            "base_branch": pr.base_branch, "number": pr.number, "url": pr.url, "state": pr.state,
            "head_sha": pr.head_sha, "review_state": pr.review_state, "check_state": pr.check_state,
            "checks": pr.checks or [], "followups": pr.followups, "waiting_reason": pr.waiting_reason,
            "merged_by": pr.merged_by, "merged_at": pr.merged_at.isoformat() if pr.merged_at else None,
            "merge_method": pr.merge_method, "merge_methods": allowed_merge_methods(pr),
            # Reviews and comments not acted on (their author has no write access: service/forgefeedback.py).
            "ignored": [str(i.get("note")) for i in (pr.poll_state or {}).get("ignored") or [] if isinstance(i, dict)]}
