"""The task-start sweep (R-HAR-7): what an agent must know before it does anything — the beans
of its issue, the open workflow instances with their enabled steps (who may take them, their
skills, what to produce), its suspended stack, the last handoff on the issue, and sibling agent
branches. The daemon adds how far the default branch moved (a git fact only it can see).

One query per table, no per-bean work: the bench asks for well under a second with 200 beans."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from ..store.schema import Agent, Issue, Task
from ..store.workflow_schema import (
    Bean,
    InteractionState,
    TaskHandoff,
    WorkflowInstance,
)
from ..workflows.library import Library, active_library
from ..workflows.loader import DiagramError
from .classification import pending_questions
from .sweep_probe import parts_to_read
from .workflow_instances import enabled_steps

MAX_BEANS_SHOWN = 50
log = logging.getLogger("predictorx.server")


def _blocked(inst: WorkflowInstance, active: WorkflowInstance | None, pending: dict | None, number: int) -> str | None:
    """Why this agent may not take the instance's steps now (None: it may) — the same rule the step
    itself applies (workflow_interaction.take_step), so the sweep and the refusals agree."""
    if inst.status == "suspended":
        return f"suspended: `predictorx workflow resume {number}` when it is the latest on the stack"
    if inst.status != "running":
        return None
    if pending and pending.get("instance") == inst.id:
        return "waits for a person's answer: " + pending["question"]
    if active is not None and active.id != inst.id:
        return f"{active.process_id} is active: suspend it first; a step of this one then makes it active"
    return None


def delivered_commits(session: Session, issue, agent_id: str, limit: int = 5) -> list[dict[str, str]]:
    from .workflow_boundary import delivered
    return [{"commit": c, "task": t.id} for t, commits in delivered(session, issue, agent_id) for c in commits][:limit]


def sweep(session: Session, lib: Library, task: Task, issue: Any = None) -> dict[str, Any]:
    """`issue`: the task's issue if the caller read it already (a claim's row has all its columns)."""
    if issue is None:
        issue = session.get(Issue, task.issue_id)
    has = parts_to_read(session, issue.id, task.agent_id, task.id)  # (a new issue's: none of them)
    beans = list(session.scalars(select(Bean).where(Bean.issue_id == issue.id).order_by(Bean.created_at))) \
        if has.beans else []
    counts: dict[str, int] = {}
    for b in beans:
        counts[b.status] = counts.get(b.status, 0) + 1
    open_beans = [b for b in beans if b.status in ("created", "in-progress")]
    state = session.scalar(select(InteractionState).where(InteractionState.issue_id == issue.id,
                                                          InteractionState.agent_id == task.agent_id)) \
        if has.state else None
    active = session.get(WorkflowInstance, state.active_instance_id) if state and state.active_instance_id else None
    pending = state.pending if state else None
    number: int = getattr(issue, "number", 0)
    instances, running = [], {}
    for inst in session.scalars(select(WorkflowInstance).where(WorkflowInstance.issue_id == issue.id)
                                .order_by(WorkflowInstance.created_at)) if has.instances else ():
        item = {"process": inst.process_id, "status": inst.status, "version": inst.version, "enabled": [],
                "active": active is not None and active.id == inst.id,
                "blocked": _blocked(inst, active, pending, number)}
        if inst.status != "completed":
            running[inst.id] = inst.process_id
        if inst.status == "running" and inst.process_id in lib.processes:
            enabled = enabled_steps(lib, inst)
            for e in enabled:
                if e.get("commit_boundary"):  # the commits that may complete it: the agent's runs' own
                    e["delivered"] = delivered_commits(session, issue, task.agent_id)
            item["enabled"] = enabled
        instances.append(item)
    last = session.scalar(select(TaskHandoff).join(Task, Task.id == TaskHandoff.task_id)
                          .where(TaskHandoff.issue_id == issue.id, TaskHandoff.task_id != task.id)
                          .order_by(Task.created_at.desc()).limit(1)) if has.handoff else None
    siblings = []
    for t, name in session.execute(select(Task, Agent.name).join(Agent, Agent.id == Task.agent_id)
                                   .where(Task.issue_id == issue.id, Task.id != task.id,
                                          Task.branch_name.is_not(None), Task.branch_name != "")
                                   .order_by(Task.created_at)) if has.siblings else ():
        siblings.append({"task": t.id, "agent": name, "branch": t.branch_name, "status": t.status})
    return {
        "issue": {"number": issue.number, "title": issue.title, "status": issue.status},
        # `workflow`: the running workflow holding the bean — its steps change its status (bean_rules)
        "beans": {"counts": counts, "open": [{"id": b.id, "title": b.title, "status": b.status, "etag": b.version,
                                              "workflow": running.get(b.instance_id)}
                                             for b in open_beans[:MAX_BEANS_SHOWN]],
                  "open_total": len(open_beans)},
        "instances": instances,
        "interaction": {"state": state.state if state else "idle",
                        "active": active.process_id if active else None,
                        "stack": list(reversed(state.stack)) if state else [],
                        "pending": pending},
        "last_handoff": last.content if last else None,
        "sibling_branches": siblings,
        # classifications the table did not decide: the agent answers them (issue 24 §3, §6)
        "pending_classifications": pending_questions(session, task.issue_id) if has.pending else [],
    }


def at_claim(session: Session, task: Any, issue: Any = None) -> dict[str, Any] | None:
    """The sweep handed over with the claim of `task` (a task row: its id, issue and agent), so
    its daemon does not ask for it (protocol.Claim.sweep, issue 30); None when it cannot be made
    — the daemon then asks `…/harness/sweep` as an older server's does, and tells the agent why
    it has none if that fails too. A fault of its own is never the claim's failure; the
    database's is (its transaction is lost either way, and the daemon claims again)."""
    try:
        return sweep(session, active_library(), task, issue)  # (the claim read its issue: no query again)
    except DBAPIError:
        raise
    except DiagramError:  # a broken process folder: the daemon's own request says so
        return None
    except Exception:
        log.exception("task %s: no sweep in its claim", getattr(task, "id", "?"))
        return None
