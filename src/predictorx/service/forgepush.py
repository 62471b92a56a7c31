"""A task's branch on its way to a forge, and merged or discarded locally (issue 22 §2, §5, §6).

Push: when a task ends with a branch whose repository maps to one of the workspace's forge
connections (a repository checkout by its URL, a local folder by its `origin` remote, as the daemon
reported them in the task's review), and the project pushes automatically (its forge policy), the
answer to the task's finish hands its daemon the `PushTarget` — remote URL, branch, and the
connection's credential (`target_at_finish`). When a person asks (`request_push`), the task's
daemon is asked over its event stream (a private `request` with op `forge_push`) and fetches the
target from a daemon-only route that answers only the daemon that ran the task. Either way it
pushes with the credential in git's environment only and reports back; a success creates or updates the PullRequest row of (issue, connection,
repository, branch) in state "pushed" (a PR already open keeps its state) and calls `after_push`
listeners (the forge loop opens the PR there when the project says so).

A follow-up task (`Task.pull_request_id`) continues that row's branch: its claim carries
`continue_branch`, its daemon fetches the branch with the same target, and its push updates the
same branch, leased on what the forge held when it started.

Local merge and discard (a local folder with no forge) are synchronous asks to the task's daemon;
a transaction must not stay open while waiting for it, so they are three steps — `local_request`
(what to ask), the ask (server/forgeasks.py), `local_recorded` (what it said: a system message on
the task and `review["merged"]` / `review["discarded"]` = {by, sha, how, into, at}).
"""

from __future__ import annotations

import importlib
import logging
import re
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..forges.base import PushTarget
from ..store.schema import Daemon, ForgeConnection, Issue, Project, PullRequest, Task, User, utcnow
from . import audit, relaypass
from . import tasks as task_service
from .errors import Conflict, Invalid, NotFound
from ..protocol import Event
from .events import emit

log = logging.getLogger("predictorx.forgepush")

#: Called after a successful push, inside its transaction: `listener(session, pull_request, task)`.
#: The forge loop registers "open the PR if the project says auto_pr" here (this module imports
#: nothing of it). A listener that raises is logged; the push stays recorded.
after_push: list[Callable[[Session, PullRequest, Task], None]] = []

POLICY_DEFAULTS: dict[str, Any] = {"auto_push": True, "auto_pr": False, "draft": True, "max_followups": 3,
                                   "on_merge": "done"}
LOCAL_OPS = ("local_merge", "local_discard")
#: How long the server waits for a daemon's answer to a local merge or discard.
LOCAL_TIMEOUT = 60.0


# -- what a task's repository is on which forge ----------------------------------------------------

def policy(session: Session, project_id: str | None) -> dict[str, Any]:
    """The project's forge policy with its defaults (service/forgepolicy.py's, when it is there)."""
    project = session.get(Project, project_id) if project_id else None
    try:
        from . import forgepolicy  # type: ignore[attr-defined,unused-ignore]  # forge-core's module

        if project is not None:
            return dict(forgepolicy.policy_of(project))
    except ImportError:
        pass
    stored = project.forge_policy if project is not None and isinstance(project.forge_policy, dict) else {}
    return {**POLICY_DEFAULTS, **{k: v for k, v in stored.items() if k in POLICY_DEFAULTS}}


def _forges() -> Any:
    """service/forges.py (forge-core's): connections, their mapping, their credential."""
    return importlib.import_module(".forges", __package__)


def connection_for_url(session: Session, workspace_id: str, url: str) -> tuple[ForgeConnection, Any] | None:
    try:
        forges = _forges()
    except ImportError:  # a server without forge connections (service/forges.py) maps nothing
        return None
    return forges.connection_for_url(session, workspace_id, url)


def _repository_url(review: dict[str, Any] | None) -> str | None:
    if not isinstance(review, dict):
        return None
    url = review.get("origin_url") or (review.get("repo_label") if review.get("mode") == "checkout" else None)
    return url if isinstance(url, str) and url else None


def _clean(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.hostname + (f":{parts.port}" if parts.port else ""), parts.path, "", "")) \
        if parts.hostname else url


def remote_url(url: str, base_url: str, repo_path: str) -> str:
    """The https URL the daemon pushes to: the repository's own when it is one (without any
    user:token part), else (ssh, scp-like) the connection's web root and the repository's path."""
    if url.startswith(("https://", "http://")):
        return _clean(url)
    return f"{base_url.rstrip('/')}/{repo_path.strip('/')}.git"


def _task_branch(branch: str, task_id: str) -> bool:
    """`task_id`'s own branch as daemon/branches makes it: agent/<agent>/<task>, or by its collision
    rule <that>-N, agent-<agent>-<task>, <that>-N. Another task's branch is not this task's to push:
    a member's daemon naming one would overwrite that task's work (its PR) through the relay."""
    return re.fullmatch(rf"agent[/-].+[/-]{re.escape(task_id)}(?:-[0-9]{{1,2}})?", branch) is not None


def _pushable(task: Task, review: dict[str, Any] | None = None) -> str | None:
    """Why the task's branch (as `review` says, default the task's) cannot be pushed, or None."""
    review = review if review is not None else task.review if isinstance(task.review, dict) else {}
    if not review.get("branch"):
        return f"task {task.id} left no branch to push"
    if not task.pull_request_id and not _task_branch(str(review.get("branch")), task.id):
        return f"task {task.id}'s branch {review.get('branch')!r} is not a task's branch (agent/...)"
    if review.get("mode") not in ("checkout", "worktree", "in_place"):
        return f"task {task.id}'s branch is not in a repository its daemon can push from"
    if not task.daemon_id:
        return f"task {task.id} has no daemon"
    return None


def _tracked(session: Session, task: Task,
             review: dict[str, Any] | None = None) -> tuple[ForgeConnection, str, str, PullRequest | None] | None:
    """(connection, repository path on the forge, URL to push to, its PullRequest row if any), for
    the branch `review` names (default: the task's review)."""
    review = review if review is not None else task.review if isinstance(task.review, dict) else {}
    if task.pull_request_id:
        pr = session.get(PullRequest, task.pull_request_id)
        if pr is not None and pr.workspace_id == task.workspace_id:
            conn = session.get(ForgeConnection, pr.connection_id)
            if conn is not None:
                return conn, pr.repo_path, pr.repo_url, pr
    url = _repository_url(review)
    if url is None:
        return None
    found = connection_for_url(session, task.workspace_id, url)
    if found is None:
        return None
    conn, ref = found
    branch = str(review.get("branch") or "")
    pr = session.scalars(select(PullRequest).where(
        PullRequest.issue_id == task.issue_id, PullRequest.connection_id == conn.id,
        PullRequest.repo_path == ref.path, PullRequest.branch == branch)).first()
    return conn, ref.path, remote_url(url, conn.base_url, ref.path), pr


# -- asking the daemon to push ----------------------------------------------------------------------

def _ask_push(session: Session, task: Task) -> None:
    # A private request: only the task's daemon hears it (server/hub.py PRIVATE_TYPES).
    emit(session, task.workspace_id, Event.REQUEST, daemon_id=task.daemon_id, op="forge_push", task_id=task.id,
         request_id=f"push-{task.id}")


def target_at_finish(session: Session, daemon_id: str, task_id: str) -> PushTarget | None:
    """After a daemon's finish: the push target, handed back in the finish's answer to that daemon
    (one round trip instead of a request on its stream and a fetch), when the task completed with
    a branch on a mapped repository and its project pushes automatically; else None."""
    task = session.get(Task, task_id)
    if task is None or task.daemon_id != daemon_id or task.status != "completed" or _pushable(task) is not None:
        return None
    pushed, tip = (task.review or {}).get("pushed"), (task.review or {}).get("tip")
    if isinstance(pushed, dict) and tip and pushed.get("sha") == tip:  # pushed before its finish (earlypush)
        return None
    if not policy(session, task.project_id).get("auto_push", True) or _tracked(session, task) is None:
        return None
    target = push_target(session, daemon_id, task_id)
    tip = (task.review or {}).get("tip")
    if isinstance(tip, str) and tip:  # the commit the daemon just reported: it pushes that (no rev-parse)
        target.extra["tip"] = tip
    return target


#: What a daemon says of a branch when it asks for its push target while its agent works or at its
#: end (the rest of the review comes with the finish).
EARLY_KEYS = ("mode", "branch", "repo_path", "origin_url", "repo_label", "continued_from")
#: How long a daemon may use a push target asked while its agent works (daemon/earlypush.py): a
#: run that ends later asks again, so a credential rotated or a policy changed meanwhile is seen.
TARGET_VALID_S = 120


def target_at_end(session: Session, daemon_id: str, task_id: str, branch: dict[str, Any]) -> PushTarget | None:
    """While a task's agent works (and again at its end when that answer is older than
    TARGET_VALID_S), before its finish: the push target of the branch its daemon names (`branch`:
    EARLY_KEYS of the review it will report), so the push starts the moment the work is on the
    branch. Only for the daemon running the task (anyone else: 404), only while it runs, only when
    the project pushes automatically and the repository maps to a connection; else None. Nothing
    is written."""
    task = _daemons_task(session, daemon_id, task_id)
    review = {k: branch[k] for k in EARLY_KEYS if isinstance(branch.get(k), str) and branch[k]}
    if task.status != "running" or _pushable(task, review) is not None:
        return None
    if not policy(session, task.project_id).get("auto_push", True) or _tracked(session, task, review) is None:
        return None
    return push_target(session, daemon_id, task_id, review)


def request_push(session: Session, task: Task) -> None:
    """A person asks for the task's branch to be pushed (a project that pushes only when asked, or
    again after a failure). Raises Invalid / Conflict with the reason."""
    why = _pushable(task)
    if why:
        raise Invalid(why)
    if task.status not in ("completed", "failed", "cancelled"):
        raise Conflict(f"task {task.id} is still {task.status}; push it when it has ended")
    if _tracked(session, task) is None:
        raise Invalid(f"the repository of task {task.id} ({_repository_url(task.review) or 'unknown'}) maps to no "
                      "forge connection of this workspace; add one (`predictorx forge add`)")
    _ask_push(session, task)


def _daemons_task(session: Session, daemon_id: str, task_id: str) -> Task:
    """The task, only for the daemon that ran it (anyone else: 404, no hint it exists)."""
    task = session.get(Task, task_id)
    daemon = session.get(Daemon, daemon_id)
    if task is None or daemon is None or task.workspace_id != daemon.workspace_id or task.daemon_id != daemon_id:
        raise NotFound(f"task {task_id!r} not found")
    return task


def push_target(session: Session, daemon_id: str, task_id: str, review: dict[str, Any] | None = None) -> PushTarget:
    """What the task's daemon pushes (or, continuing a branch, fetches) with: the relay's path on
    this server and a relay pass for it, to that daemon only — never the forge's credential.
    `review`: the branch as the daemon names it before its finish (target_at_end); default the
    task's reported review."""
    task = _daemons_task(session, daemon_id, task_id)
    review = review if review is not None else task.review if isinstance(task.review, dict) else {}
    tracked = _tracked(session, task, review)
    if tracked is None:
        raise NotFound(f"task {task_id} has no branch on a forge")
    conn_row, repo_path, url, pr = tracked
    branch = pr.branch if pr is not None else review.get("branch")
    if not branch:
        raise NotFound(f"task {task_id} has no branch on a forge")
    if pr is None and not _task_branch(str(branch), task_id):
        # The pass's branch is the one the relay lets the daemon update: never one the daemon
        # merely names (`main`), only a task's own agent/... branch or the PR's it continues.
        raise NotFound(f"task {task_id} has no branch on a forge ({str(branch)[:200]!r} is not a task's branch)")
    lease = _lease(review, pr)
    extra = {"repo_path": str(review.get("repo_path") or ""), "local_branch": str(review.get("branch") or branch),
             "lease": str(lease or ""), "mode": str(review.get("mode") or "")}
    # The server's relay, not the forge: the pass opens it for this task, daemon and branch only
    # (service/forgerelay.py); the connection's credential stays here.
    relay_pass = relaypass.sign(task_id, daemon_id, str(branch), conn_row.id, url)
    return PushTarget(remote_url=relaypass.relay_path(task_id), branch=branch, username=relaypass.USERNAME,
                      token=relay_pass, extra=extra)


def _lease(review: dict[str, Any], pr: PullRequest | None) -> str:
    """What the forge's branch must hold for the push to overwrite it ("": it must not exist)."""
    return str(review.get("continued_from") or (pr.head_sha if pr is not None and pr.head_sha else "") or "")


def push_reported(session: Session, daemon_id: str, task_id: str, *, ok: bool, sha: str | None,
                  error: str | None, branch: dict[str, Any] | None = None,
                  result: str | None = None) -> PullRequest | None:
    """The daemon's report of a push: the PullRequest row on success (listeners called), a
    sentence on the task either way. `branch` (EARLY_KEYS) and `result`: the report of a push
    made before the task's finish (daemon/earlypush.py) names the branch as target_at_end was
    asked for it, and carries the run's result (the PR's body reads it); the finish's review
    keeps the `pushed` this writes (`keep_pushed`)."""
    task, review, (conn, repo_path, url, pr) = reported_branch(session, daemon_id, task_id, branch)
    early = task.status == "running" and branch is not None
    if early and result and not task.result:
        task.result = result  # as its finish will report it
    if not ok or not sha:
        _say(session, task, {"event": "forge_push_failed",
                             "message": f"The branch was not pushed to {url}: {error or 'no reason given'}"})
        return pr
    # The same report again (its answer was lost on the way, so the daemon sent it with its finish
    # or on its own): the review keeps it, the task says it once, an opened PR hears of it once.
    again = pr is not None and pr.task_id == task.id and pr.head_sha == sha
    pr = _recorded(session, task, review, conn.id, repo_path, url, pr, sha, say=not again)
    if again and pr.number is not None:
        return pr
    emit(session, task.workspace_id, Event.TASK_CHANGED, task_id=task.id, status=task.status)
    for listener in list(after_push):
        try:
            listener(session, pr, task)
        except Exception:  # one listener's failure must not undo the push's record
            log.exception("an after_push listener failed for task %s", task.id)
    return pr


def reported_branch(session: Session, daemon_id: str, task_id: str, branch: dict[str, Any] | None = None
                    ) -> tuple[Task, dict[str, Any], tuple[ForgeConnection, str, str, PullRequest | None]]:
    """A push report's task (only for the daemon that ran it: else NotFound), the branch it
    pushed as a review says it (`branch`, EARLY_KEYS, while the task runs; else the task's
    review) and where that is tracked (_tracked; NotFound when nowhere). Nothing is written."""
    task = _daemons_task(session, daemon_id, task_id)
    early = task.status == "running" and branch is not None
    review = ({k: branch[k] for k in EARLY_KEYS if isinstance(branch.get(k), str) and branch[k]} if early and branch
              else dict(task.review) if isinstance(task.review, dict) else {})
    tracked = _tracked(session, task, review)
    if tracked is None:
        raise NotFound(f"task {task_id} has no branch on a forge")
    return task, review, tracked


def creates_branch(review: dict[str, Any], pr: PullRequest | None) -> bool:
    """A push leased on "must not exist" that landed created the branch (no PR of it can be open)."""
    return not _lease(review, pr)


def _recorded(session: Session, task: Task, review: dict[str, Any], conn_id: str, repo_path: str, url: str,
              pr: PullRequest | None, sha: str, *, say: bool = True) -> PullRequest:
    """The PullRequest row of a push that landed, `review.pushed` and the task's sentence."""
    # Leased on "must not exist" and it landed: the push created the branch (prflow skips
    # looking for a PR of it on the forge then).
    created = creates_branch(review, pr)
    if pr is None:
        issue_status = session.scalar(select(Issue.status).where(Issue.id == task.issue_id))
        pr = PullRequest(workspace_id=task.workspace_id, issue_id=task.issue_id, agent_id=task.agent_id,
                         connection_id=conn_id, repo_path=repo_path, repo_url=url, branch=review["branch"],
                         state="pushed", issue_status_before=issue_status)
        session.add(pr)
    elif pr.state == "discarded":
        pr.state = "pushed"
    pr.head_sha, pr.task_id, pr.updated_at = sha, task.id, utcnow()
    session.flush()
    prior = task.review.get("pushed") if isinstance(task.review, dict) else None
    review["pushed"] = (prior if not say and isinstance(prior, dict) and prior.get("sha") == sha else
                        {"sha": sha, "url": url, "branch": pr.branch, "at": utcnow().isoformat(), "created": created})
    task.review = review
    if say:
        _say(session, task, {"event": "forge_push", "branch": pr.branch,
                             "message": f"Pushed {sha[:12]} to branch {pr.branch} of {url}."})
    return pr


def keep_pushed(session: Session, task_id: str, review: dict[str, Any]) -> dict[str, Any]:
    """The finish's `review`, with the `pushed` of a push reported before it (push_reported with
    `branch`) when that pushed the branch the review names."""
    prior = session.scalar(select(Task.review).where(Task.id == task_id))
    if not isinstance(prior, dict) or "pushed" in review or review.get("branch") != prior.get("branch"):
        return review
    pushed = prior.get("pushed")
    return {**review, "pushed": pushed} if isinstance(pushed, dict) and pushed.get("sha") else review


def push_at_finish(session: Session, daemon_id: str, task_id: str, *, ok: bool, sha: str | None,
                   error: str | None) -> None:
    """A push reported with the task's finish (its target was asked at the agent's end): recorded
    as `push_reported` does. A branch the finish's review does not map (changed since) is logged,
    never a reason to refuse the finish."""
    try:
        push_reported(session, daemon_id, task_id, ok=ok, sha=sha, error=error)
    except NotFound as e:
        log.warning("task %s: a push reported with its finish was not recorded (%s)", task_id, e)


def continue_branch(session: Session, task: Any) -> dict[str, Any] | None:
    """For a claim: the branch a follow-up task continues (its daemon fetches it with the push
    target), or None."""
    pr_id = getattr(task, "pull_request_id", None)
    if not pr_id:
        return None
    pr = session.get(PullRequest, pr_id)
    if pr is None or pr.workspace_id != task.workspace_id or pr.state in ("merged", "closed", "discarded"):
        return None
    return {"branch": pr.branch, "remote_url": pr.repo_url, "pull_request_id": pr.id, "head_sha": pr.head_sha}


def _say(session: Session, task: Task, content: dict[str, Any]) -> None:
    task_service.append_messages(session, task, [{"seq": task.message_seq + 1, "kind": "system", "content": content}])


# -- local merge and discard ----------------------------------------------------------------------

def local_request(session: Session, workspace_id: str, task_id: str, op: str) -> tuple[str, dict[str, Any]]:
    """(daemon id, request) for merging or discarding the task's branch where it lives; Invalid
    with a sentence when there is nothing local to merge."""
    if op not in LOCAL_OPS:
        raise Invalid(f"op must be one of {', '.join(LOCAL_OPS)}")
    task = task_service.get_task(session, workspace_id, task_id)
    review = task.review if isinstance(task.review, dict) else {}
    if review.get("mode") not in ("worktree", "in_place") or not review.get("branch"):
        raise Invalid(f"task {task_id} left no branch in a local folder to "
                      f"{'merge' if op == 'local_merge' else 'discard'}"
                      + (" (its work is in the daemon's repo cache: push it to a forge, or fetch it from there)"
                         if review.get("mode") == "checkout" else ""))
    if review.get("merged") or review.get("discarded"):
        done = "merged" if review.get("merged") else "discarded"
        raise Conflict(f"task {task_id}'s branch was already {done}")
    if not task.daemon_id:
        raise Invalid(f"task {task_id} has no daemon")
    issue_number = session.scalar(select(Issue.number).where(Issue.id == task.issue_id))
    request = {"op": op, "task_id": task.id, "repo_path": review.get("repo_path"), "branch": review["branch"],
               "mode": review.get("mode"), "issue": f"#{issue_number}", "start": review.get("base"),
               "continued": bool(task.pull_request_id)}
    if op == "local_discard":
        request["expected"] = review.get("tip")
        request["kept_folder"] = review.get("worktree_path") if review.get("mode") == "worktree" else None
    return task.daemon_id, request


def daemon_name(session: Session, daemon_id: str) -> str:
    d = session.get(Daemon, daemon_id)
    return d.name if d is not None else daemon_id


def local_recorded(session: Session, workspace_id: str, task_id: str, user_id: str | None, op: str,
                   answer: dict[str, Any], *, address: str | None = None) -> dict[str, Any]:
    """Record what the daemon did (who asked, the result) and return the result; a merge is audited."""
    task = task_service.get_task(session, workspace_id, task_id)
    data = answer.get("data") or {}
    who = session.get(User, user_id) if user_id else None
    by = {"user_id": user_id, "name": getattr(who, "name", None)}
    result = {"by": by, "sha": data.get("sha"), "how": data.get("how"), "into": data.get("into"),
              "message": data.get("message"), "at": utcnow().isoformat()}
    review = dict(task.review) if isinstance(task.review, dict) else {}
    review["merged" if op == "local_merge" else "discarded"] = result
    if op == "local_discard":
        review["branch_deleted"] = True
    task.review = review
    if op == "local_merge":
        audit.record(session, workspace_id=workspace_id, actor_id=user_id, action="merge",
                     target=f"task {task.id} branch {task.branch_name or ''}".strip(),
                     detail={"task_id": task.id, "sha": data.get("sha"), "into": data.get("into"), "where": "local"},
                     address=address)
    person = by["name"] or "a person"
    _say(session, task, {"event": op, "message": f"{person}: {data.get('message') or op}", "by": by})
    emit(session, task.workspace_id, Event.TASK_CHANGED, task_id=task.id, status=task.status)
    return result
