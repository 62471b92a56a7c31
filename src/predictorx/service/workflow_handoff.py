"""The handoff artefact a task leaves for the next task on its issue (R-HAR-7): what was done,
commits and branch, beans touched, the workflow position, open questions and the next step.

The agent writes its part while it runs (summary, open questions, next step); at the task's end
the daemon adds the git facts and the result, and the server adds what it knows for certain —
the beans this task touched and where every instance stands — so the next task starts exactly
where this one stopped, even when the agent wrote nothing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Task, utcnow
from ..store.workflow_schema import Bean, TaskHandoff, WorkflowInstance
from ..workflows.library import Library
from .workflow_instances import enabled_steps

AGENT_KEYS = ("done", "open_questions", "next_step")
DAEMON_KEYS = ("branch", "commits", "default_branch", "default_head", "result")


def _position(session: Session, lib: Library, task: Task) -> tuple[list[dict[str, Any]], str]:
    out, text = [], []
    for inst in session.scalars(select(WorkflowInstance).where(WorkflowInstance.issue_id == task.issue_id)
                                .order_by(WorkflowInstance.created_at)):
        enabled = []
        if inst.status == "running" and inst.process_id in lib.processes:
            enabled = [s["node"] for s in enabled_steps(lib, inst)]
        out.append({"process": inst.process_id, "status": inst.status, "enabled": enabled, "version": inst.version})
        text.append(f"{inst.process_id} {inst.status}" + (f" at {', '.join(enabled)}" if enabled else ""))
    return out, "; ".join(text)


def _beans_touched(session: Session, task: Task) -> list[dict[str, Any]]:
    """Beans of the issue changed while the task ran (by the agent, its steps or anyone else)."""
    since = task.started_at or task.created_at
    return [{"id": b.id, "title": b.title, "status": b.status}
            for b in session.scalars(select(Bean).where(Bean.issue_id == task.issue_id, Bean.updated_at >= since)
                                     .order_by(Bean.title))]


def write(session: Session, lib: Library, task: Task, *, agent_part: dict[str, Any] | None = None,
          daemon_part: dict[str, Any] | None = None) -> TaskHandoff:
    row = session.get(TaskHandoff, task.id)
    content = dict(row.content) if row else {}
    if agent_part:
        content.update({k: agent_part[k] for k in AGENT_KEYS if agent_part.get(k) is not None})
        content["written_by_agent"] = True
    if daemon_part:
        content.update({k: daemon_part[k] for k in DAEMON_KEYS if daemon_part.get(k) is not None})
        if not content.get("done") and daemon_part.get("result"):
            content["done"] = str(daemon_part["result"])[:2000]
    position, text = _position(session, lib, task)
    content.update(task=task.id, position=position, position_text=text, beans=_beans_touched(session, task),
                   at=utcnow().isoformat())
    if not content.get("next_step"):
        enabled = [f"{p['process']}: {', '.join(p['enabled'])}" for p in position if p["enabled"]]
        content["next_step"] = ("take the enabled step(s) — " + "; ".join(enabled)) if enabled else None
    if row is None:
        row = TaskHandoff(task_id=task.id, issue_id=task.issue_id, agent_id=task.agent_id, content=content)
        session.add(row)
    else:
        row.content = content
    session.flush()
    return row


def of_task(session: Session, task: Task) -> TaskHandoff | None:
    """The handoff a task left, if any."""
    return session.get(TaskHandoff, task.id)


def for_issue(session: Session, issue_id: str, limit: int = 20) -> list[TaskHandoff]:
    return list(session.scalars(select(TaskHandoff).join(Task, Task.id == TaskHandoff.task_id)
                                .where(TaskHandoff.issue_id == issue_id)
                                .order_by(Task.created_at.desc()).limit(limit)))
