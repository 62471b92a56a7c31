"""The feedback loop (issue 22 §5): what happens on a PR becomes the agent's next task.

A review requesting changes or a failed check on the PR's head queues a follow-up for the PR's
agent on the same issue, with `Task.pull_request_id` set so its daemon continues the same branch
(and its push updates the same PR), and a prompt carrying the review's comments (file, line,
text) or the check's name and excerpt. The agent's earlier CLI session is resumed by the claim
(service/claiming.py hands a follow-up the agent's last session on the issue).

Automatic follow-ups are bounded per PR by the project's `max_followups`; at the bound the PR
says why it waits for a person. A person's request — a PR comment mentioning the agent
(`@agent-name`), or "Ask the agent again" — is never bounded.

Only reviews and comments by people with write access to the repository count (`may_write`,
asked of the forge by the caller through service/forgetrust.py): anyone else's is recorded on
the PR (`poll_state["ignored"]`, shown on the PR panel) and changes nothing. Failed checks are not
authored by people and always count.

Everything here runs inside the caller's write transaction and makes no network call.
"""

from __future__ import annotations

import re
from typing import Any, Container

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..forges import base as forge_api
from ..store.schema import Agent, Issue, PullRequest, Task, utcnow
from . import tasks
from .errors import Conflict
from .pullrequests import OPEN_STATES, announce, apply_remote, policy_of

#: Review ids and failed checks already acted on, per PR (kept in poll_state, bounded).
SEEN_LIMIT = 100
IGNORED_LIMIT = 20
EXCERPT_LIMIT = 4000
COMMENT_LIMIT = 2000


# -- finding the PR an event is about ----------------------------------------------------------

def rows_for(session: Session, connection_id: str, event: forge_api.ForgeEvent) -> list[PullRequest]:
    """The tracked rows an event names: by PR number, else by head branch (a check on a branch
    whose PR is not opened yet still lands on its row)."""
    base = select(PullRequest).where(PullRequest.connection_id == connection_id,
                                     PullRequest.repo_path == event.repo_path)
    number = event.pr_number if event.pr_number is not None else (event.pr.number if event.pr else None)
    if number is not None:
        rows = list(session.scalars(base.where(PullRequest.number == number)))
        if rows:
            return rows
    branch = event.head_branch or (event.pr.head_branch if event.pr else None)
    if branch:
        return list(session.scalars(base.where(PullRequest.branch == branch,
                                               PullRequest.state.in_(("pushed",) + OPEN_STATES))))
    if event.head_sha:
        return list(session.scalars(base.where(PullRequest.head_sha == event.head_sha)))
    return []


# -- applying an event -------------------------------------------------------------------------

def apply_event(session: Session, pr: PullRequest, event: forge_api.ForgeEvent,
                review: forge_api.Review | None = None, may_write: Container[str] = ()) -> str:
    """One event on one row; returns what it did, in a few words (the webhook's answer).
    `may_write`: the authors known to have write access (service/forgetrust.py)."""
    if event.kind == "pr" and event.pr is not None:
        apply_remote(session, pr, event.pr)
        return f"pull request {pr.state}"
    if event.kind == "review":
        return on_review(session, pr, review or event.review, may_write)
    if event.kind == "comment" and event.comment is not None:
        return on_comment(session, pr, event.comment, may_write)
    if event.kind == "check" and event.check is not None:
        return on_checks(session, pr, [event.check], event.head_sha)
    return "nothing to do"


def on_review(session: Session, pr: PullRequest, review: forge_api.Review | None,
              may_write: Container[str] = ()) -> str:
    if review is None:
        return "nothing to do"
    seen = _seen(pr, "reviews")
    if review.id and review.id in seen:
        return "review already taken"
    _remember(pr, "reviews", review.id)
    if review.author not in may_write:
        return _ignored(session, pr, "review", review.author)
    if review.state in ("approved", "changes_requested"):
        pr.review_state = review.state
    elif pr.review_state == "none":
        pr.review_state = review.state
    announce(session, pr)
    if review.state == "changes_requested":
        _issue_to(session, pr, "in_progress")
        return _follow_up(session, pr, review_prompt(pr, review), automatic=True)
    mention = _mentions(session, pr, " ".join([review.body, *(c.body for c in review.comments)]))
    if mention:
        return _follow_up(session, pr, review_prompt(pr, review), automatic=False)
    return f"review {review.state}"


def on_comment(session: Session, pr: PullRequest, comment: forge_api.ReviewComment,
               may_write: Container[str] = ()) -> str:
    if not _mentions(session, pr, comment.body):
        return "comment noted"
    if comment.author not in may_write:
        return _ignored(session, pr, "comment", comment.author)
    return _follow_up(session, pr, comment_prompt(pr, comment), automatic=False)


def on_checks(session: Session, pr: PullRequest, checks: list[forge_api.Check], sha: str | None) -> str:
    """Store the checks of the PR's head; a check newly failing there asks the agent to fix it."""
    if sha and pr.head_sha and sha != pr.head_sha:
        return "check on an older commit: ignored"
    stored = {c.get("name"): c for c in current_checks(pr)}
    newly_failed = []
    for check in checks:
        before = stored.get(check.name)
        if check.state == "failure" and (before is None or before.get("state") != "failure"):
            newly_failed.append(check)
        stored[check.name] = {"name": check.name, "state": check.state, "url": check.url,
                              "excerpt": check.excerpt[:EXCERPT_LIMIT], "sha": sha or pr.head_sha}
    pr.checks = list(stored.values())
    pr.check_state = combined(pr.checks)
    announce(session, pr)
    if not newly_failed or pr.state not in OPEN_STATES:
        return f"checks {pr.check_state}"
    key = f"{pr.head_sha}:{','.join(sorted(c.name for c in newly_failed))}"
    if key in _seen(pr, "checks"):
        return "failed check already taken"
    _remember(pr, "checks", key)
    return _follow_up(session, pr, check_prompt(pr, newly_failed), automatic=True)


def current_checks(pr: PullRequest) -> list[dict[str, Any]]:
    """The stored checks of the PR's head: a push moves the head (service/forgepush.py sets it)
    and the old head's results say nothing about the new one."""
    return [c for c in (pr.checks or []) if isinstance(c, dict) and c.get("sha") in (None, pr.head_sha)]


def forget_stale_checks(pr: PullRequest) -> None:
    kept = current_checks(pr)
    if len(kept) != len(pr.checks or []):
        pr.checks, pr.check_state = kept, combined(kept)


def combined(checks: list[dict[str, Any]]) -> str:
    states = {c.get("state") for c in checks}
    for state in ("failure", "pending", "success"):
        if state in states:
            return state
    return "none"


# -- follow-ups --------------------------------------------------------------------------------

def _follow_up(session: Session, pr: PullRequest, prompt: str, *, automatic: bool) -> str:
    if automatic:
        bound = int(policy_of(session, pr)["max_followups"])
        if pr.followups >= bound:
            pr.waiting_reason = (f"The agent was sent back {pr.followups} time(s), the project's bound; "
                                 "a person decides now (ask the agent again, merge or discard).")
            announce(session, pr)
            return "bound reached: waiting for a person"
    issue = session.get(Issue, pr.issue_id)
    agent = session.get(Agent, pr.agent_id) if pr.agent_id else None
    if issue is None or agent is None or agent.archived_at is not None:
        pr.waiting_reason = "The agent of this branch is gone or archived; a person decides now."
        announce(session, pr)
        return "no agent: waiting for a person"
    task = tasks.follow_up(session, issue, agent, prompt)
    if task.status == "queued":
        task.pull_request_id = pr.id
    if automatic:
        pr.followups += 1
    pr.waiting_reason = None
    _issue_to(session, pr, "in_progress")
    announce(session, pr)
    return f"follow-up queued: task {task.id}"


def ask_again(session: Session, pr: PullRequest, person: str, request: str | None = None) -> Task | None:
    """A person asks the agent to look again ("Ask the agent again"): never bounded; the prompt
    carries what the PR last said (failing checks, the last review asking for changes)."""
    if pr.state not in OPEN_STATES + ("pushed",):
        raise Conflict(f"this pull request is {pr.state}; there is nothing to ask again")
    parts = [f"{person} asks you to look at pull request #{pr.number or '?'} ({pr.url or pr.branch}) again."]
    if request:
        parts.append(request.strip()[:COMMENT_LIMIT])
    last = (pr.poll_state or {}).get("last_feedback")
    if last:
        parts.append("What the pull request said last:\n\n" + str(last))
    failing = [c for c in current_checks(pr) if c.get("state") == "failure"]
    if failing:
        parts.append(_checks_text(failing))
    _follow_up(session, pr, "\n\n".join(parts), automatic=False)
    return session.scalar(select(Task).where(Task.issue_id == pr.issue_id, Task.agent_id == pr.agent_id)
                          .order_by(Task.created_at.desc()).limit(1))


def _ignored(session: Session, pr: PullRequest, what: str, author: str) -> str:
    """Record on the PR that a review or comment was not acted on, and why (the PR panel says it)."""
    note = f"{what} from {author or 'an unknown account'} ignored: no write access to the repository"
    ignored = list((pr.poll_state or {}).get("ignored") or [])
    ignored.append({"note": note, "author": author, "at": utcnow().isoformat()})
    pr.poll_state = {**(pr.poll_state or {}), "ignored": ignored[-IGNORED_LIMIT:]}
    announce(session, pr)
    return note


def _issue_to(session: Session, pr: PullRequest, status: str) -> None:
    issue = session.get(Issue, pr.issue_id)
    if issue is not None and issue.status in ("in_review", "done", "todo", "backlog"):
        issue.status = status


def _mentions(session: Session, pr: PullRequest, text: str) -> bool:
    agent = session.get(Agent, pr.agent_id) if pr.agent_id else None
    return agent is not None and re.search(rf"(?<![\w@])@{re.escape(agent.name)}(?![\w-])", text or "") is not None


def _seen(pr: PullRequest, key: str) -> list[str]:
    return list((pr.poll_state or {}).get("seen_" + key) or [])


def _remember(pr: PullRequest, key: str, value: str) -> None:
    seen = _seen(pr, key)
    seen.append(value)
    pr.poll_state = {**(pr.poll_state or {}), "seen_" + key: seen[-SEEN_LIMIT:]}


# -- prompts -----------------------------------------------------------------------------------

def _where(pr: PullRequest) -> str:
    return f"pull request #{pr.number} ({pr.url})" if pr.number else f"branch {pr.branch}"


def review_prompt(pr: PullRequest, review: forge_api.Review) -> str:
    said = "requested changes." if review.state == "changes_requested" else "commented."
    paragraphs = [f"{review.author or 'A reviewer'} reviewed {_where(pr)} and {said}"]
    if review.body:
        paragraphs.append(review.body.strip()[:COMMENT_LIMIT])
    if review.comments:
        lines = ["Comments:"]
        for c in review.comments:
            at = f"{c.path}:{c.line}" if c.path and c.line else (c.path or "general")
            lines.append(f"- {at} — {c.body.strip()[:COMMENT_LIMIT]}")
        paragraphs.append("\n".join(lines))
    paragraphs.append(f"Make the changes on the same branch ({pr.branch}); your commits update the pull request.")
    text = "\n\n".join(paragraphs)
    pr.poll_state = {**(pr.poll_state or {}), "last_feedback": text}
    return text


def comment_prompt(pr: PullRequest, comment: forge_api.ReviewComment) -> str:
    at = f" on {comment.path}:{comment.line}" if comment.path and comment.line else ""
    return (f"{comment.author or 'Someone'} wrote on {_where(pr)}{at}:\n\n{comment.body.strip()[:COMMENT_LIMIT]}\n\n"
            f"Work on the same branch ({pr.branch}); your commits update the pull request.")


def _checks_text(checks: list[dict[str, Any]]) -> str:
    parts = []
    for c in checks:
        head = f"The check \"{c.get('name')}\" failed" + (f" ({c.get('url')})" if c.get("url") else "") + "."
        excerpt = str(c.get("excerpt") or "").strip()
        parts.append(head + (f"\n\n```\n{excerpt[:EXCERPT_LIMIT]}\n```" if excerpt else ""))
    return "\n\n".join(parts)


def check_prompt(pr: PullRequest, failed: list[forge_api.Check]) -> str:
    text = (f"A check failed on the head of {_where(pr)} (commit {(pr.head_sha or '')[:12]}).\n\n"
            + _checks_text([{"name": c.name, "url": c.url, "excerpt": c.excerpt} for c in failed])
            + f"\n\nFix it on the same branch ({pr.branch}); your commits update the pull request.")
    pr.poll_state = {**(pr.poll_state or {}), "last_feedback": text}
    return text
