"""Each agent reply says which bean it is on and what is next (seed, session lifecycle: "every
reply reports the bean being worked on and what comes next"). An agent's comment on an issue where
it has an active workflow ends with that line, written by Predictor X from the interaction state,
the bean the active instance holds and its enabled steps — so it is never missing and never wrong."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Issue
from ..store.workflow_schema import Bean, InteractionState, WorkflowInstance
from ..workflows.library import Library, active_library
from ..workflows.loader import DiagramError

MARK = "\n\n---\n"


def position(session: Session, lib: Library | None, issue: Issue, agent_id: str) -> str | None:
    """`Position: workflow P · bean “B” (in-progress) · next: step (role), …`, or None when idle."""
    row = session.scalar(select(InteractionState).where(InteractionState.issue_id == issue.id,
                                                        InteractionState.agent_id == agent_id))
    if row is None or not row.active_instance_id:
        return None
    inst = session.get(WorkflowInstance, row.active_instance_id)
    if inst is None:
        return None
    bean = session.scalars(select(Bean).where(Bean.instance_id == inst.id, Bean.status == "in-progress")
                           .order_by(Bean.updated_at.desc()).limit(1)).first()
    from .workflow_instances import enabled_steps
    steps = enabled_steps(lib, inst) if lib is not None else []
    nxt = ", ".join(f"{s['name']} (`{s['node']}`, {s['role'] or 'any role'})" for s in steps) or inst.status
    on = f"bean “{bean.title}” ({bean.status})" if bean else "no bean claimed"
    line = f"Position: workflow `{inst.process_id}` · {on} · next: {nxt}"
    if row.pending:
        line += f" · waiting for your answer: {row.pending['question']}"
    return line


def with_position(session: Session, issue: Issue, agent_id: str, body: str) -> str:
    """An agent's comment body with its position line (unchanged when the agent has no active workflow)."""
    try:
        lib: Library | None = active_library()
    except DiagramError:  # a broken extra folder: the position without its next steps
        lib = None
    line = position(session, lib, issue, agent_id)
    return body if line is None else f"{body.rstrip()}{MARK}{line}"
