"""Issues, comments and assignment. Assigning an issue to an agent queues a task."""

from __future__ import annotations

import re

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from .. import richtext
from ..store.schema import Agent, Comment, Issue, Member, Task, User, Workspace
from . import issue_hooks, mentions, tasks
from .issue_versions import act_as, actor_name, check_fresh
from .agents import find_agent
from .auth import Principal, may_act_on_issue
from .errors import Forbidden, Invalid, NotFound
from .events import emit
from .projects import PRIORITIES, get_project

_ISSUE_REF = re.compile(r"^#?(\d{1,9})$")  # 12 or #12
ISSUE_STATUSES = ("backlog", "todo", "in_progress", "in_review", "done", "cancelled")


def get_issue(session: Session, workspace_id: str, ref: str | int) -> Issue:
    """By id, by number, or by '#N' / 'KEY-N' style numbers."""
    issue = None
    text = str(ref).strip()
    m = _ISSUE_REF.match(text)
    digits = m.group(1) if m else ""
    if digits:
        issue = session.scalar(select(Issue).where(Issue.workspace_id == workspace_id, Issue.number == int(digits)))
    if issue is None:
        issue = session.get(Issue, text)
        if issue is not None and issue.workspace_id != workspace_id:
            issue = None
    if issue is None:
        raise NotFound(f"issue {text!r} not found; `predictorx issue list` shows the issues")
    return issue


def issue_for(session: Session, principal: Principal, workspace_id: str, ref: str | int) -> Issue:
    """The issue, if this principal may act on it: a task token only on its own issue (R-EX-4)."""
    issue = get_issue(session, workspace_id, ref)
    if not may_act_on_issue(session, principal, issue.id):
        raise Forbidden("this token may not act on that issue")
    return issue


def change_issue(session: Session, principal: Principal, workspace_id: str, ref: str | int,
                 changes: dict[str, str], version: int | None = None) -> Issue:
    """Title, body, status, priority (what is given): the API's PATCH, the issue page's controls
    (each its own field) and the board. With `version` (what the editor saw), a field someone else
    changed since is not overwritten (EditConflict). An agent's task token may only move its own
    issue's status, never to closed."""
    issue = issue_for(session, principal, workspace_id, ref)
    if principal.kind == "task" and set(changes) - {"status"}:
        raise Forbidden("an agent's task token may only change the issue's status")
    if principal.kind == "task" and changes.get("status") in ("done", "cancelled"):
        raise Forbidden("an agent never closes an issue; set in_review and a person will close it")
    if "status" in changes and changes["status"] not in ISSUE_STATUSES:
        raise Invalid(f"status must be one of {', '.join(ISSUE_STATUSES)}")
    if "priority" in changes and changes["priority"] not in PRIORITIES:
        raise Invalid(f"priority must be one of {', '.join(PRIORITIES)}")
    if "title" in changes and not changes["title"].strip():
        raise Invalid("an issue needs a title")
    for key, value in changes.items():
        check_fresh(issue, key, value, version)
    act_as(session, actor_name(session, principal))
    for key, value in changes.items():
        setattr(issue, key, value)
    session.flush()
    return issue


def assign_checked(session: Session, principal: Principal, workspace_id: str, ref: str | int,
                   assignee: str | None, version: int | None = None) -> tuple[Issue, Task | None]:
    """Assign from the API, the CLI or the issue page: like `assign`, refusing to replace an
    assignee someone else set after `version` (what the editor saw)."""
    issue = get_issue(session, workspace_id, ref)
    if version is not None:
        wanted = _resolve_assignee(session, workspace_id, assignee)[1] if assignee else None
        check_fresh(issue, "assignee_id", wanted, version, shown=assignee_name(session, issue) or "nobody")
    act_as(session, actor_name(session, principal))
    task = assign(session, issue, assignee)
    session.flush()
    return issue, task


def reserve_numbers(session: Session, workspace_id: str, count: int = 1) -> int:
    """The first of `count` consecutive issue numbers, taken in this transaction: one
    UPDATE … RETURNING under the workspace row's write lock (held to the commit, so numbers are
    never handed out twice; they are gap-free as long as the caller files an issue for each)."""
    return int(session.execute(update(Workspace).where(Workspace.id == workspace_id)
                               .values(issue_counter=Workspace.issue_counter + count)
                               .returning(Workspace.issue_counter)).scalar_one()) - count + 1


def create_issue(session: Session, workspace_id: str, user_id: str | None, *, title: str, body: str = "",
                 status: str = "todo", priority: str = "none", project_id: str | None = None,
                 assignee: str | None = None, number: int | None = None) -> Issue:
    """`number`: one the caller took with `reserve_numbers` (a batch of issues filed at once)."""
    if status not in ISSUE_STATUSES:
        raise Invalid(f"status must be one of {', '.join(ISSUE_STATUSES)}")
    if priority not in PRIORITIES:
        raise Invalid(f"priority must be one of {', '.join(PRIORITIES)}")
    if project_id:
        project_id = get_project(session, workspace_id, project_id).id
    issue = Issue(workspace_id=workspace_id, number=number or reserve_numbers(session, workspace_id), title=title,
                  body=body, status=status, priority=priority, project_id=project_id, created_by=user_id)
    session.add(issue)
    session.flush()
    if assignee:
        assign(session, issue, assignee, new=True)
    issue_hooks.issue_created(session, issue)  # R-HAR-2: the harness classifies it
    return issue


def _cancel_others(session: Session, issue: Issue, keep_agent_id: str | None) -> None:
    """The issue moved away from an agent: its queued or running work on it stops."""
    for t in tasks.list_for_issue(session, issue):
        if t.active_key is not None and t.agent_id != keep_agent_id:
            tasks.cancel(session, t, reason="the issue was reassigned")


def _resolve_assignee(session: Session, workspace_id: str, assignee: str) -> tuple[str, Agent | User]:
    """("agent", agent) or ("member", user) by id or name; agents first."""
    try:
        return "agent", find_agent(session, workspace_id, assignee)
    except NotFound:
        pass
    user = session.scalar(select(User).join(Member, Member.user_id == User.id).where(
        Member.workspace_id == workspace_id, (User.id == assignee) | (User.name == assignee)))
    if user is None:
        raise NotFound(f"no agent or member named {assignee!r}; `predictorx agent list` shows the agents")
    return "member", user


#: session.info key: the agents and members this transaction assigned issues to.
_ASSIGNEES = "px.assignees"


def assign(session: Session, issue: Issue, assignee: str | None, *, new: bool = False) -> Task | None:
    """Assign to an agent (queues a task) or a member; None unassigns. Other agents' active tasks
    on the issue are cancelled, as a person would expect from taking the work away (`new`: the
    issue was made in this transaction, so it has none to look for)."""
    if not assignee:
        _cancel_others(session, issue, None)
        issue.assignee_type, issue.assignee_id = None, None
        return None
    kind, who = _resolve_assignee(session, issue.workspace_id, assignee)
    # Kept for the transaction: the answer names the assignee (assignee_name), and a row no longer
    # referenced leaves the session's identity map, so that lookup was a second SELECT of it.
    session.info.setdefault(_ASSIGNEES, []).append(who)
    if isinstance(who, Agent):
        if not new:
            _cancel_others(session, issue, who.id)
        issue.assignee_type, issue.assignee_id = "agent", who.id
        return tasks.enqueue(session, issue, who, new_issue=new)
    if not new:
        _cancel_others(session, issue, None)
    issue.assignee_type, issue.assignee_id = kind, who.id
    return None


def assignee_name(session: Session, issue: Issue) -> str | None:
    if issue.assignee_type == "agent":
        a = session.get(Agent, issue.assignee_id)
        return a.name if a else None
    if issue.assignee_type == "member":
        u = session.get(User, issue.assignee_id)
        return u.name if u else None
    return None


def author_name(session: Session, kind: str, author_id: str | None) -> str:
    """Who wrote a comment, in words: the agent's or person's name, or what they were."""
    row = session.get(Agent if kind == "agent" else User, author_id) if author_id else None
    return row.name if row is not None else ("an agent" if kind == "agent" else "someone")


def list_issues(session: Session, workspace_id: str, *, project_id: str | None = None,
                status: str | None = None, limit: int = 200, offset: int = 0) -> list[Issue]:
    q = select(Issue).where(Issue.workspace_id == workspace_id)
    if project_id:
        q = q.where(Issue.project_id == project_id)
    if status:
        q = q.where(Issue.status == status)
    return list(session.scalars(q.order_by(Issue.number.desc()).offset(offset).limit(limit)))


def count_issues(session: Session, workspace_id: str, *, project_id: str | None = None) -> int:
    q = select(func.count()).select_from(Issue).where(Issue.workspace_id == workspace_id)
    if project_id:
        q = q.where(Issue.project_id == project_id)
    return session.scalar(q) or 0


def add_comment(session: Session, issue: Issue, *, body: str, author_type: str, author_id: str | None) -> Comment:
    if not body.strip():
        raise Invalid("a comment needs a body")
    # Rendered here, once (issue 29 §5): pages paste it, and never render Markdown on a view.
    names = list(session.scalars(select(Agent.name).where(Agent.workspace_id == issue.workspace_id,
                                                          Agent.archived_at.is_(None))))
    c = Comment(issue_id=issue.id, body=body, author_type=author_type, author_id=author_id,
                body_html=richtext.comment_html(body, names))
    session.add(c)
    session.flush()
    emit(session, issue.workspace_id, "comment_added", issue_id=issue.id, number=issue.number, comment_id=c.id)
    issue_hooks.commented(session, issue, c)  # R-HAR-2: a comment addressed to an agent is a request
    mentions.queue_followups(session, issue, c)  # R-EX-10: `@agent …` asks that agent for more
    return c


def list_comments(session: Session, issue: Issue) -> list[Comment]:
    return list(session.scalars(select(Comment).where(Comment.issue_id == issue.id).order_by(Comment.created_at)))
