"""Workflow instances in the database: start (idempotent), enabled steps, complete a step with its
policy check, bean operation and history row — one transaction (R-HAR-3, R-HAR-5)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.schema import Issue, utcnow
from ..store.workflow_schema import WorkflowInstance, WorkflowStep
from ..workflows.engine import Actor, EngineOverrun, Run, StepRefused
from ..workflows.library import Library
from ..workflows.loader import DiagramError
from ..workflows.odrl import PERMIT, Request, evaluate
from . import workflow_facts as fact_svc
from . import workflow_roles as role_svc
from .errors import Conflict, NotFound
from .workflow_failures import WorkflowFailed  # (callers catch it from here too)
from .workflow_boundary import refusal as boundary_refusal
from .workflow_refusals import StepForbidden  # (callers catch it from here too)

_NS = uuid.UUID("6d1c5f0e-8a61-4f3a-9d0f-2b7f3c1a9e55")


def instance_id(issue_id: str, process_id: str) -> str:
    """Derived, so two starts of the same process on the same issue are one instance."""
    return str(uuid.uuid5(_NS, f"{issue_id}/{process_id}"))


def get_instance(session: Session, issue: Issue, process_id: str) -> WorkflowInstance:
    inst = session.get(WorkflowInstance, instance_id(issue.id, process_id))
    if inst is None:
        raise NotFound(f"issue #{issue.number} has no instance of {process_id!r}; "
                       f"`predictorx workflow start {issue.number} {process_id}` starts one")
    return inst


def list_instances(session: Session, issue: Issue) -> list[WorkflowInstance]:
    return list(session.scalars(select(WorkflowInstance).where(WorkflowInstance.issue_id == issue.id)
                                .order_by(WorkflowInstance.created_at)))


def start(session: Session, lib: Library, issue: Issue, process_id: str) -> tuple[WorkflowInstance, bool]:
    try:
        model = lib.process(process_id)
    except DiagramError as e:
        raise NotFound(str(e)) from None
    iid = instance_id(issue.id, process_id)
    existing = session.get(WorkflowInstance, iid)
    if existing is not None:
        return existing, False
    try:
        run = Run.start(lib, process_id)
    except EngineOverrun as e:  # nothing to keep: the instance never had a state
        raise WorkflowFailed(f"workflow {process_id!r} cannot start: {e}") from None
    inst = WorkflowInstance(id=iid, workspace_id=issue.workspace_id, issue_id=issue.id, process_id=process_id,
                            diagram=model.diagram, state=run.dump(), facts={},
                            status="completed" if run.completed else "running")
    session.add(inst)
    session.flush()
    return inst, True


def load_run(lib: Library, inst: WorkflowInstance) -> Run:
    return Run.load(lib, inst.process_id, inst.state, inst.facts)


#: The enabled steps of a serialised state, by (library, process, state): a pure function of them,
#: so kept — a claim's sweep, the finish's delivery check and handoff, an inbox each loaded the same
#: state into the engine (~0.7 ms of CPU each, issue 30). Bounded; the library is kept beside its
#: id, so a new library (reloaded processes) never reads another's entries.
_ENABLED: dict[tuple[int, str, str], tuple[Library, list[dict[str, Any]]]] = {}
_ENABLED_MAX = 256


def enabled_steps(lib: Library, inst: WorkflowInstance) -> list[dict[str, Any]]:
    """The instance's enabled steps (Step.as_dict), each a dict of the caller's own."""
    if inst.status in ("completed", "failed", "stopped"):
        return []
    key = (id(lib), inst.process_id, inst.state)
    kept = _ENABLED.get(key)
    if kept is None or kept[0] is not lib:
        if len(_ENABLED) >= _ENABLED_MAX:
            _ENABLED.clear()
        kept = _ENABLED[key] = (lib, [s.as_dict() for s in load_run(lib, inst).enabled()])
    return [dict(step) for step in kept[1]]


@dataclass
class Completion:
    ref: str
    facts: dict[str, Any] = field(default_factory=dict)
    outcome: str | None = None
    reason: str | None = None
    produced: dict[str, str] = field(default_factory=dict)
    if_version: int | None = None
    task_id: str | None = None


def _row(inst: WorkflowInstance, lib: Library, step, actor: Actor, passage, verdict: str,
         enforcement: str, status: str, task_id: str | None) -> dict[str, Any]:
    return dict(instance_id=inst.id, status=status, process_id=step.process.id, diagram=step.process.diagram,
                diagram_digest=lib.digests.get(step.process.diagram, ""), node_id=step.node.id,
                node_name=step.node.name, kind=step.kind, role=step.role, actor_type=actor.kind,
                actor_id=actor.id, actor_name=actor.name, actor_roles=sorted(actor.roles), task_id=task_id,
                outcome=passage.outcome if passage else None, reason=passage.reason if passage else None,
                computed=bool(passage and passage.computed), facts=passage.facts if passage else {},
                fact_sources=passage.fact_sources if passage else {},
                produced=passage.produced if passage else {}, verdict=verdict, enforcement=enforcement)


def policy_verdict(lib: Library, step: Any, actor: Actor) -> tuple[str, str | None]:
    """The policies' verdict on `actor` taking `step`, and the refusal's sentence when the step is
    under strict policy and not permitted (None: it may). Completion and the issue page's offer of
    a step (workflow_offers.py) both ask this."""
    model, node = step.process, step.node
    policies = lib.policies_for(model, node)
    if not policies:
        return "none", None
    v = evaluate(policies, Request(actor.kind, actor.name, actor.roles, "pass" if step.kind == "gate" else "complete",
                                   model.diagram, node.id, model.id, node.role))
    if model.enforcement_of(node) == "strict" and v.value != PERMIT:
        return v.value, f"{step.describe()} is under strict policy and {v.sentence()}; {actor.label} may not take it"
    return v.value, None


def complete(session: Session, lib: Library, issue: Issue, inst: WorkflowInstance, actor: Actor,
             req: Completion) -> tuple[WorkflowStep, list[dict[str, Any]]]:
    """Take one step. StepForbidden (nothing changed) when it is not enabled, not the actor's role,
    its gate input is wrong, or a strict policy does not permit it."""
    if req.if_version is not None and req.if_version != inst.version:
        raise Conflict(f"the instance is at version {inst.version}, not {req.if_version}; "
                       "read its enabled steps again")
    if inst.status == "suspended":
        raise StepForbidden(f"instance {inst.process_id!r} is suspended; resume it first "
                            "(`predictorx workflow resume`)")
    if inst.status == "failed":
        raise StepForbidden(f"instance {inst.process_id!r} failed (its history's last step says why); "
                            "it takes no more steps")
    if inst.status == "stopped":
        raise StepForbidden(f"instance {inst.process_id!r} was stopped by a person (its history's last step says "
                            "who and why); it takes no more steps")
    run = load_run(lib, inst)
    try:
        step = run.find(req.ref, actor)
        passage = run.prepare(step, facts=req.facts, outcome=req.outcome, reason=req.reason, produced=req.produced,
                              system=fact_svc.provider(session, issue, inst, req.task_id), issue_number=issue.number)
    except StepRefused as e:
        raise StepForbidden(str(e)) from None
    model, node = step.process, step.node
    enforcement = model.enforcement_of(node)
    if (refused := boundary_refusal(session, issue, step, passage.produced, actor, req.task_id)) is not None:
        record = _row(inst, lib, step, actor, passage, "none", enforcement, "refused", req.task_id)
        raise StepForbidden(refused, record | {"reason": refused})
    verdict, refused = policy_verdict(lib, step, actor)
    if refused is not None:
        record = _row(inst, lib, step, actor, passage, verdict, enforcement, "refused", req.task_id)
        raise StepForbidden(refused, record)
    from . import beans as bean_svc  # the bean service records through the same session
    from .bean_rules import attribution
    bean_result = None
    if node.bean_op:
        bean_result = bean_svc.engine_op(session, issue, inst, node.bean_op, passage,
                                         attribution(actor, req.task_id))
    try:
        run.apply(passage)
    except EngineOverrun as e:
        raise WorkflowFailed(f"{step.describe()} set the engine off and {e}; instance {inst.process_id!r} "
                             "is failed", _row(inst, lib, step, actor, passage, verdict, enforcement, "failed",
                                               req.task_id)) from None
    if node.bean_op == "resolve" and bean_result is not None:
        bean_svc.finish_resolve(session, bean_result, instance_completed=run.completed, step=node.id)
    inst.state = run.dump()
    inst.facts = {}  # facts are per pass (workflows/facts.py): each step's are in its history row
    inst.step_count += 1
    inst.version += 1
    inst.updated_at = utcnow()
    if run.completed:
        inst.status = "completed"
    row = WorkflowStep(seq=inst.step_count, **_row(inst, lib, step, actor, passage, verdict, enforcement, "done",
                                                    req.task_id))
    session.add(row)
    session.flush()
    return row, [s.as_dict() for s in run.enabled()]


def exit_instance(session: Session, lib: Library, issue: Issue, inst: WorkflowInstance, actor: Actor,
                  exit_id: str, reason: str, task_id: str | None) -> WorkflowStep:
    """Leave `inst` by a declared exit (Run.exit): a row of kind `exit` with the open beans it left
    (a system fact) and the reason; the instance completes."""
    if inst.status in ("completed", "stopped"):
        raise StepForbidden(f"instance {inst.process_id!r} is already {inst.status}")
    run = load_run(lib, inst)
    try:
        name, role = run.exit(exit_id, actor)
    except StepRefused as e:
        raise StepForbidden(str(e)) from None
    left = fact_svc.provider(session, issue, inst, task_id)({"open_beans"})
    inst.state, inst.status = run.dump(), "completed"
    inst.step_count += 1
    inst.version += 1
    inst.updated_at = utcnow()
    row = WorkflowStep(seq=inst.step_count, instance_id=inst.id, status="done", process_id=inst.process_id,
                       diagram=inst.diagram, diagram_digest=lib.digests.get(inst.diagram, ""),
                       node_id=f"exit:{exit_id}", node_name=name, kind="exit", role=role, actor_type=actor.kind,
                       actor_id=actor.id, actor_name=actor.name, actor_roles=sorted(actor.roles), task_id=task_id,
                       outcome=exit_id, reason=reason, computed=False, facts=left,
                       fact_sources={k: "system" for k in left}, produced={}, verdict="none",
                       enforcement="advisory")
    session.add(row)
    session.flush()
    return row


# Refused attempts are part of the record, and an agent told to can repeat one without end: the
# same refusal (same step, same actor, the instance not moved on) within the window is counted on
# the row that recorded it, and an instance keeps at most MAX_REFUSED_ROWS refused rows — past
# that, every refusal is counted on the latest one.
REFUSAL_WINDOW = timedelta(minutes=10)
MAX_REFUSED_ROWS = 50


def record_refusal(session: Session, record: dict[str, Any]) -> str:
    """Keep a refused attempt in the history (its own transaction: the step itself changed nothing).
    Returns a sentence to add to the refusal when the attempt was counted on an earlier row."""
    inst = session.get(WorkflowInstance, record["instance_id"])
    if inst is None:
        return ""
    now = utcnow()
    refused = select(WorkflowStep).where(WorkflowStep.instance_id == inst.id, WorkflowStep.status == "refused")
    moved = session.scalar(select(func.max(WorkflowStep.seq)).where(WorkflowStep.instance_id == inst.id,
                                                                   WorkflowStep.status == "done")) or 0
    same = session.scalars(refused.where(
        WorkflowStep.seq > moved, WorkflowStep.node_id == record["node_id"],
        WorkflowStep.actor_type == record["actor_type"], WorkflowStep.actor_id == record["actor_id"])
        .order_by(WorkflowStep.seq.desc()).limit(1)).first()
    if same is not None and now - (same.last_attempt_at or same.created_at) <= REFUSAL_WINDOW:
        _count(same, now)
        return (f"refused {same.attempts} times since {same.created_at:%Y-%m-%d %H:%M} UTC; "
                f"recorded once (history step {same.seq})")
    rows = session.scalar(select(func.count()).select_from(refused.subquery()))
    if rows >= MAX_REFUSED_ROWS:
        latest = session.scalars(refused.order_by(WorkflowStep.seq.desc()).limit(1)).first()
        _count(latest, now)
        return (f"this instance already records {rows} refused attempts, the most it keeps; this one is "
                f"counted on history step {latest.seq} ({latest.attempts} attempts)")
    inst.step_count += 1
    session.add(WorkflowStep(seq=inst.step_count, last_attempt_at=now, **record))
    session.flush()
    return ""


def _count(row: WorkflowStep, now) -> None:
    row.attempts = (row.attempts or 1) + 1
    row.last_attempt_at = now


def history(session: Session, inst: WorkflowInstance) -> list[WorkflowStep]:
    return list(session.scalars(select(WorkflowStep).where(WorkflowStep.instance_id == inst.id)
                                .order_by(WorkflowStep.seq)))


def recent_history(session: Session, inst: WorkflowInstance, limit: int) -> list[WorkflowStep]:
    """The last `limit` rows, oldest first (a page shows these; the record has them all)."""
    rows = session.scalars(select(WorkflowStep).where(WorkflowStep.instance_id == inst.id)
                           .order_by(WorkflowStep.seq.desc()).limit(limit))
    return list(reversed(list(rows)))


def done_nodes(session: Session, inst: WorkflowInstance) -> set[str]:
    return set(session.scalars(select(WorkflowStep.node_id).distinct().where(
        WorkflowStep.instance_id == inst.id, WorkflowStep.status == "done")))


def step_dict(row: WorkflowStep) -> dict[str, Any]:
    return {c: getattr(row, c) for c in ("seq", "status", "process_id", "diagram", "diagram_digest", "node_id",
                                         "node_name", "kind", "role", "actor_type", "actor_id", "actor_name",
                                         "actor_roles", "task_id", "outcome", "reason", "computed", "facts",
                                         "produced", "verdict", "enforcement")} | {
        "fact_sources": row.fact_sources or {},
        "created_at": row.created_at.isoformat(), "attempts": row.attempts or 1,
        "last_attempt_at": row.last_attempt_at.isoformat() if row.last_attempt_at else None}


def instance_dict(inst: WorkflowInstance, issue: Issue | None = None) -> dict[str, Any]:
    return {"id": inst.id, "issue_id": inst.issue_id, "issue_number": issue.number if issue else None,
            "process_id": inst.process_id, "diagram": inst.diagram, "status": inst.status,
            "facts": inst.facts, "steps": inst.step_count, "version": inst.version,
            "created_at": inst.created_at.isoformat(), "updated_at": inst.updated_at.isoformat()}


def actor_roles(session: Session, lib: Library, issue: Issue, kind: str, principal_id: str) -> frozenset[str]:
    return role_svc.roles_of(session, lib, issue, kind, principal_id)
