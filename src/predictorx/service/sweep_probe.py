"""Which parts of a task's sweep (workflow_sweep.py) its issue has anything for, in one statement
(issue 30).

The sweep is six queries — beans, the agent's interaction state, workflow instances, the last
handoff, sibling branches, pending classifications — and a claim carries one (at_claim). A new
issue's first task, the usual claim, has none of them: six statements that each found nothing.
One statement of EXISTS tests now says which to run; each test is a superset of its query's
conditions (no joins), so a part it rules out is one whose query would have found nothing, and
the sweep's answer is the same.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import bindparam, exists, select
from sqlalchemy.orm import Session

from ..store import direct
from ..store.schema import Task
from ..store.workflow_schema import Bean, Classification, InteractionState, TaskHandoff, WorkflowInstance

_bean: Any = Bean.__table__
_state: Any = InteractionState.__table__
_instance: Any = WorkflowInstance.__table__
_handoff: Any = TaskHandoff.__table__
_task: Any = Task.__table__
_classification: Any = Classification.__table__

_PROBE = select(
    exists().where(_bean.c.issue_id == bindparam("p_issue")).label("beans"),
    exists().where(_state.c.issue_id == bindparam("p_issue"), _state.c.agent_id == bindparam("p_agent")).label("state"),
    exists().where(_instance.c.issue_id == bindparam("p_issue")).label("instances"),
    exists().where(_handoff.c.issue_id == bindparam("p_issue"), _handoff.c.task_id != bindparam("p_task")).label("handoff"),
    exists().where(_task.c.issue_id == bindparam("p_issue"), _task.c.id != bindparam("p_task"),
                   _task.c.branch_name.is_not(None), _task.c.branch_name != "").label("siblings"),
    exists().where(_classification.c.issue_id == bindparam("p_issue"),
                   _classification.c.method == "pending").label("pending"),
)


class SweepParts(NamedTuple):
    beans: bool
    state: bool
    instances: bool
    handoff: bool
    siblings: bool
    pending: bool


EVERY_PART = SweepParts(True, True, True, True, True, True)


def parts_to_read(session: Session, issue_id: str, agent_id: str, task_id: str) -> SweepParts:
    session.flush()  # what the transaction added is seen, as the queries' autoflush saw it
    row = direct.first(session.connection(), _PROBE, {"p_issue": issue_id, "p_agent": agent_id, "p_task": task_id})
    if row is None:
        return EVERY_PART
    return SweepParts(*(bool(v) for v in row))
