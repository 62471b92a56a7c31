"""The workflow record of a workspace (or one issue), a page at a time: every instance with its
history, what `prov qaqc` checks (R-HAR-5). A long-running instance has tens of thousands of
steps, so a page holds at most `limit` steps and `limit` instances (besides the rest of the one
the cursor stopped in), in (instance id, seq) order. Each instance comes with the beans it governs
(their status and status-change journal): `prov qaqc` checks each settled one against the steps.
An instance whose history does not fit is cut; the next page carries on with its next steps, so
a reader joins records by instance id. The cursor is `<instance id>:<seq>` — the last step given
(seq 0 when none was) — opaque to clients."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from ..store.schema import Issue
from ..store.workflow_schema import Bean, WorkflowInstance, WorkflowStep
from .errors import Invalid
from .workflow_instances import instance_dict, step_dict

DEFAULT_LIMIT = 1000
MAX_LIMIT = 10_000
_CURSOR = re.compile(r"([0-9a-f-]{36}):([0-9]{1,10})")


def parse_cursor(cursor: str | None) -> tuple[str, int] | None:
    if not cursor:
        return None
    m = _CURSOR.fullmatch(cursor)
    if m is None:
        raise Invalid(f"cursor {cursor[:80]!r} is not one this server gave: pass the `next` of the page "
                      "before, or no cursor for the first page")
    return m.group(1), int(m.group(2))


def page(session: Session, workspace_id: str, issue_id: str | None = None, cursor: str | None = None,
         limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """`{"records": [{"instance", "steps"}], "next": cursor or None}`."""
    after = parse_cursor(cursor)
    q = (select(WorkflowInstance, Issue).join(Issue, Issue.id == WorkflowInstance.issue_id)
         .where(WorkflowInstance.workspace_id == workspace_id))
    if issue_id:
        q = q.where(WorkflowInstance.issue_id == issue_id)
    if after:
        q = q.where(WorkflowInstance.id >= after[0])
    pairs = [(inst, iss) for inst, iss in session.execute(q.order_by(WorkflowInstance.id).limit(limit + 2))]
    own = 1 if after and pairs and pairs[0][0].id == after[0] else 0  # the cursor's: the rest of its steps
    more_instances = len(pairs) > limit + own
    pairs = pairs[:limit + own]
    if not pairs:
        return {"records": [], "next": None}
    sq = select(WorkflowStep).where(WorkflowStep.instance_id.in_([inst.id for inst, _ in pairs]))
    if after:
        sq = sq.where(or_(WorkflowStep.instance_id != after[0], WorkflowStep.seq > after[1]))
    rows = list(session.scalars(sq.order_by(WorkflowStep.instance_id, WorkflowStep.seq).limit(limit + 1)))
    more_steps = len(rows) > limit
    rows = rows[:limit]
    steps: dict[str, list[WorkflowStep]] = {}
    for r in rows:
        steps.setdefault(r.instance_id, []).append(r)
    nxt = None
    if more_steps:  # cut inside the last instance that has steps on this page
        last = rows[-1]
        pairs = pairs[:[inst.id for inst, _ in pairs].index(last.instance_id) + 1]
        nxt = f"{last.instance_id}:{last.seq}"
    elif more_instances:
        last_id = pairs[-1][0].id
        given = steps.get(last_id)
        nxt = f"{last_id}:{given[-1].seq if given else (after[1] if after and after[0] == last_id else 0)}"
    records = []
    beans = beans_of(session, [inst.id for inst, _ in pairs])
    for inst, iss in pairs:
        mine = steps.get(inst.id, [])
        if after and inst.id == after[0] and not mine:
            continue  # the cursor's own instance, already given in full
        records.append({"instance": instance_dict(inst, iss), "steps": [step_dict(r) for r in mine],
                        "beans": beans.get(inst.id, [])})
    return {"records": records, "next": nxt}


STATUS_OPS = ("claim", "resolve", "scrap")


def beans_of(session: Session, instance_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The beans each instance governs: status, last change, and who changed their status."""
    out: dict[str, list[dict[str, Any]]] = {}
    for b in session.scalars(select(Bean).where(Bean.instance_id.in_(instance_ids)).order_by(Bean.id)):
        out.setdefault(b.instance_id, []).append(
            {"id": b.id, "title": b.title, "status": b.status, "updated_at": b.updated_at.isoformat(),
             "changes": [n for n in b.notes if n.get("op") in STATUS_OPS]})
    return out
