"""What puts things in people's inboxes (issue 27 §3), and what tells them outside (§4).

It reads what a write transaction did, just before it commits (server/state.py calls `derive`):
the events its use cases recorded (a run failed, was cancelled by a hard budget, asks a person a
permission question or had it answered) and the ORM changes a session listener noted (an issue
filed, assigned to a person, moved to in_review; a comment with @mentions; a workflow instance
whose enabled steps changed). So no use case calls it, and an item commits with what caused it or
not at all. Each new (or raised again) item is queued for the person's channels and, once per
thing, the workspace's (service/notify_deliveries.py); browsers hear `inbox_changed`.

Who: a run's failure — its agent's owner and the issue's subscribers; an assignment — the person;
a review — the subscribers; a people-lane step or gate — the members bound to its role in the
project, else the subscribers; a mention — the person named (`@name`: a member's name or the
part of their e-mail before the @); a comment — the subscribers but its author; a permission
question — the agent's owner.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, event, func, inspect as sa_inspect, select
from sqlalchemy.orm import Session

from ..store import direct
from ..store.inbox_schema import InboxItem, IssueSubscription
from ..store.schema import Agent, Comment, Issue, Member, Task, User, utcnow
from ..store.workflow_schema import RoleBinding, WorkflowInstance
from . import inbox, notify_channels, notify_deliveries, subscriptions
from .budgets import REASON_PREFIX
from .events import emit

_CHANGES = "inbox_changes"
_SEEN = "inbox_events_seen"
_MENTION = re.compile(r"(?<![\w.@])@([A-Za-z0-9][A-Za-z0-9_.-]{0,99})")
_registered = False
_task: Any = Task.__table__
_agent: Any = Agent.__table__
#: A run whose agent asks a person before it acts (Agent.permissions "ask").
_ASKS = (select(_task.c.id).join(_agent, _agent.c.id == _task.c.agent_id)
         .where(_task.c.id == bindparam("f_task"), _agent.c.permissions == "ask"))
#: The run statuses an inbox cares about: ended (badly, or moving its issue to in_review), or
#: running (it may ask a person something).
_RUN_STATUSES = ("failed", "cancelled", "running", "completed")


def register() -> None:
    """At app start (server/app.py): note the ORM changes that concern inboxes, on every session."""
    global _registered
    if not _registered:
        event.listen(Session, "before_flush", _note_changes)
        _registered = True


def _changed(obj: Any, *names: str) -> bool:
    state = sa_inspect(obj)
    return any(state.attrs[n].history.has_changes() for n in names)


def _note_changes(session: Session, _flush_context: Any, _instances: Any) -> None:
    noted = session.info.setdefault(_CHANGES, [])
    for obj in session.new:
        if isinstance(obj, Issue):
            noted.append(("issue_new", obj))
        elif isinstance(obj, Comment):
            noted.append(("comment", obj))
        elif isinstance(obj, WorkflowInstance):
            noted.append(("workflow", obj))
    for obj in session.dirty:
        if isinstance(obj, Issue):
            if _changed(obj, "assignee_id", "assignee_type") and obj.assignee_type == "member":
                noted.append(("assigned", obj))
            if _changed(obj, "status") and obj.status == "in_review":
                noted.append(("review", obj))
        elif isinstance(obj, WorkflowInstance) and _changed(obj, "state", "status"):
            noted.append(("workflow", obj))


def derive(session: Session) -> None:
    """Items, subscriptions and notifications from what this transaction did (before its commit)."""
    if not _registered:
        return
    events = session.info.get("events", [])
    fresh = events[session.info.get(_SEEN, 0):]
    changes = session.info.pop(_CHANGES, [])
    if not changes and not any(e.get("type") == "task_changed" and e.get("status") in _RUN_STATUSES for e in fresh):
        session.info[_SEEN] = len(events)
        return
    feed = Feed(session)
    for e in fresh:
        if e.get("type") == "task_changed" and e.get("task_id"):
            feed.task_changed(e["task_id"], e.get("status"))
    seen: set[tuple[str, int]] = set()
    for what, obj in changes:
        # A row made in a savepoint that was rolled back (an autopilot's failed firing) is gone.
        if not sa_inspect(obj).persistent:
            continue
        if (what, id(obj)) not in seen:
            seen.add((what, id(obj)))
            getattr(feed, f"on_{what}")(obj)
    feed.finish()
    session.info[_SEEN] = len(session.info.get("events", []))


#: A task's issue, in one statement (built once): the task's own row was loaded just for its issue id.
_ISSUE_OF_TASK = select(Issue).join(Task, Task.issue_id == Issue.id).where(Task.id == bindparam("task"))


class Feed:
    def __init__(self, session: Session):
        self.s = session
        self.raised: list[InboxItem] = []
        self.touched: dict[str, set[str]] = {}  # workspace -> people whose inbox changed

    # -- raising -----------------------------------------------------------------------------------
    def _raise(self, issue: Issue | None, people: set[str] | set[str | None], kind: str, key: str, title: str, detail: str = "",
               link: str = "/", task_id: str | None = None, workspace_id: str | None = None) -> None:
        ws = workspace_id or (issue.workspace_id if issue else None)
        if ws is None:
            return
        for user_id in sorted(p for p in people if p):
            item = inbox.raise_item(self.s, workspace_id=ws, user_id=user_id, kind=kind, source_key=key,
                                    title=title, detail=detail, link=link, task_id=task_id,
                                    issue_id=issue.id if issue else None)
            self.touched.setdefault(ws, set()).add(user_id)
            if item is not None:
                self.raised.append(item)

    def _settle(self, workspace_id: str, prefix: str, keep: set[str]) -> None:
        for user_id in inbox.settle(self.s, workspace_id, prefix, keep):
            self.touched.setdefault(workspace_id, set()).add(user_id)

    def subscribers(self, issue: Issue) -> set[str]:
        found = subscriptions.subscribers_and_members(self.s, issue)  # (who is a member: the same statement)
        if not found and issue.created_by and not self.s.scalar(select(func.count()).select_from(
                IssueSubscription).where(IssueSubscription.issue_id == issue.id)):
            # an issue from before subscriptions: its author
            found = [(issue.created_by, self._member(issue.workspace_id, issue.created_by))]
        return {u for u, member in found if member}

    def _member(self, workspace_id: str, user_id: str | None) -> bool:
        return bool(user_id) and self.s.get(Member, (workspace_id, user_id)) is not None

    # -- runs --------------------------------------------------------------------------------------
    def task_changed(self, task_id: str, status: str | None) -> None:
        if status in ("failed", "cancelled"):
            self._run_ended(task_id, status)
        elif status == "running":  # (a question or its answer arrives with the run's messages)
            self._permission(task_id)
        elif status == "completed":  # the finish moves the issue in one statement, not through the ORM
            issue = self.s.scalar(_ISSUE_OF_TASK, {"task": task_id})  # (the task's row is not needed)
            if issue is not None and issue.status == "in_review":
                self.on_review(issue)

    def _run_ended(self, task_id: str, status: str) -> None:
        task = self.s.get(Task, task_id)
        if task is None:
            return
        budget = status == "cancelled" and (task.failure_reason or "").startswith(REASON_PREFIX)
        if status == "cancelled" and not budget:
            return  # a person cancelled it: nothing needs anyone
        issue, agent = self.s.get(Issue, task.issue_id), self.s.get(Agent, task.agent_id)
        if issue is None:
            return
        people = self.subscribers(issue) | ({agent.owner_id} if agent and self._member(issue.workspace_id,
                                                                                     agent.owner_id) else set())
        name = agent.name if agent else "an agent"
        kind = "run_budget" if budget else "run_failed"
        title = (f"{name}'s run on #{issue.number} was stopped by a budget" if budget
                 else f"{name}'s run on #{issue.number} failed")
        self._raise(issue, people, kind, f"task:{task.id}:{kind}", f"{title}: {issue.title}",
                    (task.failure_reason or "")[:1000], f"/tasks/{task.id}", task_id=task.id)
        self._settle(issue.workspace_id, f"permission:{task.id}:", set())

    def _permission(self, task_id: str) -> None:
        # Most agents never ask: one Core statement (built once) says so for every run's
        # `running`; derive runs after the transaction's last flush (issue 30).
        if direct.first(self.s.connection(), _ASKS, {"f_task": task_id}) is None:
            return
        row = self.s.execute(select(Task, Agent).join(Agent, Agent.id == Task.agent_id)
                             .where(Task.id == task_id, Agent.permissions == "ask")).first()
        if row is None:
            return
        task, agent = row
        from .permissions import waiting_question

        question = waiting_question(self.s, task)
        prefix = f"permission:{task.id}:"
        keep: set[str] = set()
        if question is not None:
            key = prefix + str(question.get("request_id"))[:100]
            keep.add(key)
            issue = self.s.get(Issue, task.issue_id)
            call = question.get("tool_call")
            what = str((call.get("title") if isinstance(call, dict) else None) or "a permission")[:300]
            if issue is not None and self._member(task.workspace_id, agent.owner_id):
                self._raise(issue, {agent.owner_id or ""}, "permission", key,
                            f"{agent.name} asks you on #{issue.number}: {what}", issue.title,
                            f"/tasks/{task.id}", task_id=task.id)
        self._settle(task.workspace_id, prefix, keep)

    # -- issues and comments -----------------------------------------------------------------------
    def on_issue_new(self, issue: Issue) -> None:
        subscriptions.auto_subscribe(self.s, issue, issue.created_by, "author")
        if issue.assignee_type == "member":
            self.on_assigned(issue)

    def on_assigned(self, issue: Issue) -> None:
        if issue.assignee_type != "member" or not self._member(issue.workspace_id, issue.assignee_id):
            return
        subscriptions.auto_subscribe(self.s, issue, issue.assignee_id, "assignee")
        self._raise(issue, {issue.assignee_id or ""}, "assigned", f"issue:{issue.id}:assigned",
                    f"#{issue.number} is assigned to you: {issue.title}", "", f"/issues/{issue.number}")

    def on_review(self, issue: Issue) -> None:
        self._raise(issue, self.subscribers(issue), "review", f"issue:{issue.id}:review",
                    f"#{issue.number} waits for your review: {issue.title}", "", f"/issues/{issue.number}")

    def on_comment(self, comment: Comment) -> None:
        issue = self.s.get(Issue, comment.issue_id)
        if issue is None:
            return
        author = comment.author_id if comment.author_type == "member" else None
        if author:
            subscriptions.auto_subscribe(self.s, issue, author, "comment")
        mentioned = self._mentioned(issue.workspace_id, comment.body or "") - {author}
        excerpt = (comment.body or "")[:300]
        link = f"/issues/{issue.number}#comment-{comment.id}"
        self._raise(issue, mentioned, "mention", f"comment:{comment.id}:mention",
                    f"You were mentioned on #{issue.number}: {issue.title}", excerpt, link)
        others = self.subscribers(issue) - mentioned - {author}
        self._raise(issue, others, "comment", f"comment:{comment.id}",
                    f"New comment on #{issue.number}: {issue.title}", excerpt, link)

    def _mentioned(self, workspace_id: str, text: str) -> set[str]:
        names = {n.rstrip(".-_").lower() for n in _MENTION.findall(text)} - {""}
        if not names:
            return set()
        rows = self.s.execute(select(User.id, User.name, User.email).join(Member, Member.user_id == User.id)
                              .where(Member.workspace_id == workspace_id))
        return {uid for uid, name, email in rows
                if (name or "").lower() in names or (email or "").split("@")[0].lower() in names}

    # -- workflows ---------------------------------------------------------------------------------
    def on_workflow(self, inst: WorkflowInstance) -> None:
        prefix = f"workflow:{inst.id}:"
        keep: set[str] = set()
        issue = self.s.get(Issue, inst.issue_id)
        if issue is not None and inst.status == "running":
            for step in _people_steps(inst):
                key = prefix + str(step["node"])[:120]
                keep.add(key)
                people = self._bound(issue, step["role"]) or self.subscribers(issue)
                what = "gate" if step["kind"] == "gate" else "step"
                self._raise(issue, people, what, key,
                            f"#{issue.number}: the {what} {step['name'] or step['node']!r} of {inst.process_id} "
                            f"waits for the {step['role']} lane", issue.title, f"/issues/{issue.number}")
        self._settle(inst.workspace_id, prefix, keep)

    def _bound(self, issue: Issue, role: str) -> set[str]:
        if not issue.project_id:
            return set()
        return set(self.s.scalars(select(RoleBinding.principal_id).where(
            RoleBinding.project_id == issue.project_id, RoleBinding.role == role,
            RoleBinding.principal_type == "member")))

    # -- telling people ----------------------------------------------------------------------------
    def finish(self) -> None:
        if self.raised:
            self.s.flush()
            self._notify(utcnow())
        for ws, people in self.touched.items():
            for user_id in sorted(people):
                emit(self.s, ws, "inbox_changed", user_id=user_id)

    def _notify(self, now: datetime) -> None:
        told: set[tuple[str, str]] = set()  # (workspace channel, thing): once per thing
        for item in self.raised:
            payload = _payload(item, now)
            for channel in notify_channels.listening(self.s, item.workspace_id, item.user_id, item.kind):
                if channel.user_id is not None:  # the person's own
                    notify_deliveries.enqueue(self.s, channel, item.kind, {**payload, "person": item.user_id}, now=now)
                elif (channel.id, item.source_key) not in told:
                    told.add((channel.id, item.source_key))
                    notify_deliveries.enqueue(self.s, channel, item.kind, payload, now=now)


def _people_steps(inst: WorkflowInstance) -> list[dict[str, Any]]:
    """The enabled steps of people lanes (an agent lane's step is dispatched to its agent)."""
    from ..workflows.library import DiagramError, active_library
    from .workflow_instances import enabled_steps
    from .workflow_roles import AGENT_ROLE

    try:
        steps = enabled_steps(active_library(), inst)
    except (DiagramError, Exception):  # noqa: BLE001 — an inbox never breaks the change that feeds it
        return []
    return [s for s in steps if s.get("role") and s["role"] != AGENT_ROLE]


def _payload(item: InboxItem, now: datetime) -> dict[str, Any]:
    return {"event": item.kind, "workspace_id": item.workspace_id, "at": now.isoformat(),
            "item": {"id": item.id, "kind": item.kind, "title": item.title, "detail": item.detail,
                     "link": item.link, "issue_id": item.issue_id, "task_id": item.task_id}}
