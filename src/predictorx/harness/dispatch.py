"""An agent-lane step becomes a platform task for the agent bound to that lane's role (R-HAR-3).

After every change of an instance, each enabled step whose role an agent holds queues a task for
that agent on the issue — unless it already has one active (the running task carries on; the
task-start sweep names the step, its skills and what to produce)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from ..service import tasks
from ..store.harness_schema import WorkflowInstance
from ..store.schema import Issue
from .library import Library
from .roles import agents_for


def after_change(session: Session, lib: Library, issue: Issue, inst: WorkflowInstance | None) -> list[str]:
    if inst is None or inst.status != "running":
        return []
    from .instances import enabled_steps

    queued = []
    for step in enabled_steps(lib, inst):
        if not step["role"]:
            continue
        for agent in agents_for(session, issue, step["role"]):
            task = tasks.enqueue(session, issue, agent)
            queued.append(task.id)
    return queued
