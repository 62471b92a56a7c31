"""The commit boundary (the seed: "the gate at the commit boundary rejects a write made by an entity
that is not the agent ... the agent decides freely, and the hook rejects the write regardless").

A task node declaring `<commitBoundary/>` (feature-request's `implement`, bug-triage's `fix`) records
a commit, and that commit must be one an agent's run delivered: the daemon lists, with the task's
finish, the commits its run put on the task's branch — `git rev-list <run's start>..<branch tip>` in
the daemon's own repository after delivery (daemon/review.py `commits`) — and the server keeps them
with the task (`task.review`). A commit in that list is the run's, and so is every commit between the
run's start and it; a person's commit pushed onto the agent's branch, a commit made by hand, or a
commit the agent names without having made it is in no such list, and the step is refused before
anything changes (the refused attempt is recorded like every other: history, PROV, `prov qaqc`).

It is checked here, in the service every completion goes through (API, MCP, CLI, the issue page),
against what the daemon reported: the agent's word (its `produced`) is never the evidence, and no
client can take the step around it.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import ACTIVE_STATUSES, Issue, Task
from ..workflows.engine import Actor

_HEX = re.compile(r"^[0-9a-f]{7,40}$")
#: The most recent tasks of the issue whose delivered commits are looked at.
TASKS_LOOKED_AT = 200


def refusal(session: Session, issue: Issue, step: Any, produced: dict[str, str], actor: Actor,
            task_id: str | None) -> str | None:
    """None when the step is not at a commit boundary or its commit is an agent run's own; else the
    sentence that refuses it (what was found, what to do)."""
    if not step.node.commit_boundary:
        return None
    commit = (produced.get("commit") or "").strip().lower()
    branch = produced.get("branch") or "its branch"
    where = f"{step.describe()} is at the commit boundary"
    if not _HEX.match(commit):
        return (f"{where}: {commit or 'an empty value'!r} is not a commit id; pass the commit (7 to 40 hex "
                "digits) that the agent's run made")
    runs = delivered(session, issue, actor.id if actor.kind == "agent" else None)
    for _task, commits in runs:
        if any(c.startswith(commit) for c in commits):
            return None
    name = actor.name if actor.kind == "agent" else "an agent"
    found = (f"the runs of {name} on issue #{issue.number} delivered {sum(len(c) for _, c in runs)} commit(s), "
             f"the latest {runs[0][1][0][:12]} (task {runs[0][0].id[:8]})" if runs else
             f"no run of {name} on issue #{issue.number} has delivered a commit yet")
    head = (f"{where}: commit {commit} on {branch} is not one an agent's run delivered ({found}). "
            "A commit made outside the agent's step — a person's commit pushed onto the agent's branch, or one "
            "made by hand — cannot complete it")
    current = session.get(Task, task_id) if task_id else None
    if current is not None and current.status in ACTIVE_STATUSES:
        return (f"{head}. Your run's commits reach Predictor X when the run ends and the daemon delivers them: "
                f"commit on the task's branch and end this run; the next task completes {step.node.id!r} with "
                "that commit")
    return (f"{head}; complete it with a commit the agent's run delivered (the task's review lists them), "
            "or let the agent's task make the change")


def delivered(session: Session, issue: Issue, agent_id: str | None) -> list[tuple[Task, list[str]]]:
    """(task, the commits its run delivered, newest first) for the issue's latest finished runs."""
    q = select(Task).where(Task.issue_id == issue.id, Task.review.is_not(None))
    if agent_id is not None:
        q = q.where(Task.agent_id == agent_id)
    out = []
    for task in session.scalars(q.order_by(Task.created_at.desc()).limit(TASKS_LOOKED_AT)):
        commits = (task.review or {}).get("commits")
        if isinstance(commits, list):
            kept = [c for c in commits if isinstance(c, str) and len(c) == 40]
            if kept:
                out.append((task, kept))
    return out

