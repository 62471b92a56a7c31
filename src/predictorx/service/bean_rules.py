"""Who may change a bean's status while a workflow runs (issue 29 finding 6, R-HAR-6).

A bean belongs to the workflow instance whose step last named it (`bean.instance_id`). While that
instance is not completed, the bean's status (claim, resolve, scrap) changes only through that
instance's steps — an agent's own `bean resolve` would settle work the workflow leaves to a later
step or to people. Outside the steps only a person holding a people role of the process may change
it (the role of the step that does it when a people lane does, else any people role); the change
is a `kind="bean"` row of the instance's history (status `done`, so it is in the PROV record and
`prov qaqc` reports it), and a refused attempt is a `refused` row, counted like a refused step.
A note changes no status and stays open to anyone who may act on the issue.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from ..store.schema import utcnow
from ..store.workflow_schema import Bean, WorkflowInstance
from ..workflows.engine import Actor, Run
from ..workflows.library import Library
from ..workflows.model import ProcessModel
from .workflow_refusals import StepForbidden

STATUS_OPS = ("claim", "resolve", "scrap")


def attribution(actor: Actor, task_id: str | None) -> str:
    """Who, as the bean's journal and the record say it: a person, or an agent and its task."""
    return f"agent {actor.name} (task {task_id})" if actor.kind == "agent" else f"person {actor.name}"


def governing(session: Session, bean: Bean) -> WorkflowInstance | None:
    """The not-completed instance the bean belongs to, if any."""
    if not bean.instance_id:
        return None
    inst = session.get(WorkflowInstance, bean.instance_id)
    return inst if inst is not None and inst.status != "completed" else None


def _steps_doing(model: ProcessModel | None, op: str) -> list[tuple[str, str | None]]:
    if model is None:
        return []
    return sorted((n.id, n.role) for n in model.nodes.values() if n.bean_op == op)


def people_roles(model: ProcessModel | None, op: str) -> set[str]:
    """None known (the process left the library): any person."""
    return model.people_roles(op) if model is not None else set()


def check_step_op(session: Session, bean: Bean, inst: WorkflowInstance, op: str, step_label: str) -> None:
    """A step of `inst` may act on a bean only if no other running instance holds it, and a claim
    never reopens a settled bean."""
    other = governing(session, bean)
    if other is not None and other.id != inst.id:
        raise StepForbidden(f"bean {bean.title!r} belongs to workflow {other.process_id!r}, which is not "
                            f"completed; {step_label} of {inst.process_id!r} may not {op} it")
    if op == "claim" and bean.status in ("resolved", "scrapped"):
        raise StepForbidden(f"bean {bean.title!r} is {bean.status}; {step_label} claims a created or "
                            "in-progress bean")


def _where(lib: Library, inst: WorkflowInstance) -> str:
    try:
        enabled = ([s.node_id for s in Run.load(lib, inst.process_id, inst.state, inst.facts).enabled()]
                   if inst.status == "running" and inst.process_id in lib.processes else [])
    except Exception:  # noqa: BLE001 — a state the library can no longer read: say nothing of it
        enabled = []
    return f" (now at {', '.join(enabled)})" if enabled else f" ({inst.status})"


def outside_steps(session: Session, lib: Library, bean: Bean, op: str, actor: Actor,
                  task_id: str | None) -> tuple[WorkflowInstance, str | None] | None:
    """A status change asked for directly (not by a step). None: the bean is free, go ahead.
    Otherwise (its instance, the role the person acts in) when a person with the role may; raises
    StepForbidden with the refused attempt's record when not."""
    if op not in STATUS_OPS:
        return None
    inst = governing(session, bean)
    if inst is None:
        return None
    model = lib.model_of(inst.process_id)
    roles = people_roles(model, op)
    held = sorted(roles & actor.roles)
    if actor.kind == "person" and (held or not roles):
        return inst, (held[0] if held else None)
    steps = _steps_doing(model, op)
    via = ("; its step " + ", ".join(f"{n!r} (role {r or 'any'})" for n, r in steps) + f" does the {op}"
           if steps else f"; none of its steps does a {op}")
    people = (f"a person with role {' or '.join(sorted(roles))}" if roles else "a person")
    who = "an agent never does it outside them" if actor.kind == "agent" else \
        f"{actor.label} holds {', '.join(sorted(actor.roles)) or 'no role'}"
    raise StepForbidden(
        f"bean {bean.title!r} belongs to workflow {inst.process_id!r}{_where(lib, inst)}: its status "
        f"changes through the workflow's steps{via}; outside them only {people} may {op} it, and "
        f"{who}", history_row(inst, lib, bean, op, actor, task_id, None))


def history_row(inst: WorkflowInstance, lib: Library, bean: Bean, op: str, actor: Actor, task_id: str | None,
                role: str | None, status: str = "refused") -> dict[str, Any]:
    model = lib.model_of(inst.process_id)
    return dict(instance_id=inst.id, status=status, process_id=inst.process_id, diagram=inst.diagram,
                diagram_digest=lib.digests.get(model.diagram, "") if model else "", node_id=f"bean:{op}",
                node_name=f"{op} bean {bean.title!r} outside the workflow's steps", kind="bean", role=role,
                actor_type=actor.kind, actor_id=actor.id, actor_name=actor.name, actor_roles=sorted(actor.roles),
                task_id=task_id, outcome=None, reason=None, computed=False, facts={},
                produced={"bean": bean.id}, verdict="none", enforcement="strict")


def record_outside(session: Session, lib: Library, inst: WorkflowInstance, bean: Bean, op: str, actor: Actor,
                   role: str | None, reason: str | None = None) -> None:
    """The person's change outside the steps, as a row of the instance's history."""
    from ..store.workflow_schema import WorkflowStep

    row = history_row(inst, lib, bean, op, actor, None, role, status="done")
    row["reason"] = reason
    inst.step_count += 1
    inst.updated_at = utcnow()
    session.add(WorkflowStep(seq=inst.step_count, **row))
    session.flush()
