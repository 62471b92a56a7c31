"""A person answers an ACP agent's permission question (`ask` policy; agents/acp_client.py).

The daemon records the question in the task's messages (`system`, event `permission`, `waiting`,
its `request_id` and `options`) and waits; the answer is kept on the task
(`Task.permission_answers`), where the daemon reads it, and the daemon records it in the
messages in its place in the stream (the message sequence is the daemon's).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import HOLDING_STATUSES, TERMINAL_STATUSES, Agent, Task, TaskMessage
from .errors import Conflict, Invalid
from ..protocol import Event
from .events import emit

#: How far back a question is looked for.
_RECENT = 500
#: Message events that change whether a run waits on a person (their arrival refreshes the
#: run's header and the "Waiting for you" list, not only its transcript).
QUESTION_EVENTS = frozenset({"permission", "permission_answer", "permission_timeout"})


def waiting_question(session: Session, task: Task) -> dict[str, Any] | None:
    """The newest question of the task's agent that no one has answered, or None."""
    answered = task.permission_answers or {}
    rows = session.scalars(select(TaskMessage).where(TaskMessage.task_id == task.id, TaskMessage.kind == "system")
                           .order_by(TaskMessage.seq.desc()).limit(_RECENT))
    for row in rows:
        content = row.content or {}
        if content.get("event") == "permission_timeout" or content.get("event") == "permission_answer":
            answered = {**answered, str(content.get("request_id")): True}
        if content.get("event") == "permission" and content.get("waiting") and \
                str(content.get("request_id")) not in answered:
            return content
    return None


def answer(session: Session, task: Task, option_id: str, user_id: str | None, request_id: str | None = None) -> Task:
    if task.status in TERMINAL_STATUSES:
        raise Conflict(f"task {task.id} already {task.status}: there is no question to answer")
    question = waiting_question(session, task)
    if question is None or (request_id and str(question.get("request_id")) != request_id):
        raise Conflict(f"task {task.id} is not waiting for an answer"
                       + (f" to question {request_id}" if request_id else ""))
    options = [str(o.get("optionId")) for o in question.get("options") or [] if isinstance(o, dict)]
    if option_id not in options:
        raise Invalid(f"{option_id!r} is not one of the options: {', '.join(options)}")
    task.permission_answers = {**(task.permission_answers or {}),
                               str(question["request_id"]): {"option_id": option_id, "by": user_id}}
    emit(session, task.workspace_id, Event.TASK_CHANGED, task_id=task.id, status=task.status)
    if task.daemon_id:  # the waiting daemon reads the answer now (daemon/permissionwait.py): no polling
        emit(session, task.workspace_id, Event.PERMISSION_ANSWERED, daemon_id=task.daemon_id, task_id=task.id,
             request_id=str(question["request_id"]))
    return task


def asks_or_answers(messages: list[dict[str, Any]]) -> bool:
    """Whether a batch of a run's messages asks a person something or records the answer."""
    return any(m.get("kind") == "system" and isinstance(m.get("content"), dict)
               and m["content"].get("event") in QUESTION_EVENTS for m in messages)


def waiting_runs(session: Session, workspace_id: str, limit: int = 200) -> list[tuple[Task, dict[str, Any]]]:
    """The workspace's runs waiting on a person's answer, oldest first, with their questions.
    Only agents whose policy is `ask` ever wait, and only while they hold a slot."""
    tasks = session.scalars(
        select(Task).join(Agent, Agent.id == Task.agent_id)
        .where(Task.workspace_id == workspace_id, Task.status.in_(HOLDING_STATUSES), Agent.permissions == "ask")
        .order_by(Task.created_at).limit(limit))
    return [(t, q) for t in tasks if (q := waiting_question(session, t)) is not None]
