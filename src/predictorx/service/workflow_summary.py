"""Iteration summaries as issue comments (seed: "after each round of implementation — one or more
beans closed — leave a comment on the issue: what was done this round, what is left (open beans),
links to what changed, a before/after table"). A node declaring `<h:log summary="issue"/>`
(feature-request's `more` gate) writes one when it is passed, from the record — the agent cannot
forget it, and it says only what the record holds."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Comment, Issue
from ..store.workflow_schema import Bean, WorkflowInstance, WorkflowStep
from .workflow_facts import pull_request

STATUS_OPS = {"claim": "in-progress", "resolve": "resolved", "scrap": "scrapped"}


def _since(session: Session, inst: WorkflowInstance, node_id: str, seq: int) -> int:
    """The seq of this node's previous pass (0 when this is the first round)."""
    prev = session.scalar(select(WorkflowStep.seq).where(
        WorkflowStep.instance_id == inst.id, WorkflowStep.node_id == node_id, WorkflowStep.status == "done",
        WorkflowStep.seq < seq).order_by(WorkflowStep.seq.desc()).limit(1))
    return prev or 0


def render(session: Session, issue: Issue, inst: WorkflowInstance, row: WorkflowStep,
           enabled: list[dict]) -> str:
    after = _since(session, inst, row.node_id, row.seq)
    steps = list(session.scalars(select(WorkflowStep).where(
        WorkflowStep.instance_id == inst.id, WorkflowStep.status == "done", WorkflowStep.seq > after,
        WorkflowStep.seq < row.seq).order_by(WorkflowStep.seq)))
    start = steps[0].created_at if steps else row.created_at
    rnd = len(list(session.scalars(select(WorkflowStep.id).where(
        WorkflowStep.instance_id == inst.id, WorkflowStep.node_id == row.node_id, WorkflowStep.status == "done"))))
    beans = list(session.scalars(select(Bean).where(Bean.issue_id == issue.id).order_by(Bean.created_at)))
    title = {b.id: b.title for b in beans}
    out = [f"**Iteration summary** — `{inst.process_id}`, round {rnd}", "", "Done in this round:"]
    for st in steps:
        made = ", ".join(f"{k} `{title.get(v, v) if k == 'bean' else v}`" for k, v in sorted((st.produced or {}).items()))
        out.append(f"- {st.node_name or st.node_id} ({st.actor_name})" + (f": {made}" if made else ""))
    if not steps:
        out.append("- (no step since the previous round)")
    changed = [(b, _before(b, start)) for b in beans]
    changed = [(b, was) for b, was in changed if was != b.status]
    if changed:
        out += ["", "| bean | before | after |", "|---|---|---|"]
        out += [f"| {b.title} | {was} | {b.status} |" for b, was in changed]
    left = [b for b in beans if b.status in ("created", "in-progress")]
    out += ["", f"Still to do: {len(left)} open bean(s)" + (": " + "; ".join(b.title for b in left[:20]) if left else "")]
    pr = pull_request(session, issue, row.task_id)
    if pr is not None:
        out.append(f"Branch `{pr.branch}`" + (f", pull request {pr.url}" if pr.url else ""))
    nxt = ", ".join(f"`{e['node']}` ({e['role'] or 'any role'})" for e in enabled) or "the workflow is complete"
    out.append(f"Next: {nxt}")
    return "\n".join(out)


def _before(bean: Bean, start: datetime) -> str:
    """The bean's status when the round started, from its status-change notes."""
    status = "created"
    for n in bean.notes or []:
        if n.get("op") in STATUS_OPS and n.get("at", "") < start.isoformat():
            status = STATUS_OPS[n["op"]]
    return status


def leave(session: Session, issue: Issue, inst: WorkflowInstance, row: WorkflowStep, enabled: list[dict]) -> Comment:
    from .issues import add_comment

    author_type = "agent" if row.actor_type == "agent" else "member"
    return add_comment(session, issue, body=render(session, issue, inst, row, enabled), author_type=author_type,
                       author_id=row.actor_id)
