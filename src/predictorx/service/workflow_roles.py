"""Who holds a lane's role on an issue (R-HAR-3: a lane's task only by its role).

Explicit bindings per project win. A role with no binding in the project defaults: `agent` to the
agent the issue is assigned to, every other role to the workspace's people. So an agent never
takes a people-lane step (a sign-off) unless a person bound it to that role on purpose.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Issue
from ..store.workflow_schema import RoleBinding
from ..workflows.library import Library
from .errors import Invalid

AGENT_ROLE = "agent"


def lane_roles(lib: Library) -> set[str]:
    return {r for m in lib.processes.values() for r in m.lanes.values()}


def _bindings(session: Session, issue: Issue) -> list[RoleBinding]:
    if not issue.project_id:
        return []
    return list(session.scalars(select(RoleBinding).where(RoleBinding.project_id == issue.project_id)))


def roles_of(session: Session, lib: Library, issue: Issue, kind: str, principal_id: str) -> frozenset[str]:
    """`kind`: agent | person."""
    bindings = _bindings(session, issue)
    ptype = "agent" if kind == "agent" else "member"
    roles = {b.role for b in bindings if b.principal_type == ptype and b.principal_id == principal_id}
    bound = {b.role for b in bindings}
    for role in (lane_roles(lib) | {AGENT_ROLE}) - bound:
        if role == AGENT_ROLE:
            if kind == "agent" and issue.assignee_type == "agent" and issue.assignee_id == principal_id:
                roles.add(role)
        elif kind == "person":
            roles.add(role)
    return frozenset(roles)


def agents_for(session: Session, issue: Issue, role: str) -> list[Agent]:
    """The agents a step of `role` is dispatched to."""
    bindings = [b for b in _bindings(session, issue) if b.role == role]
    if bindings:
        ids = [b.principal_id for b in bindings if b.principal_type == "agent"]
        return [a for a in (session.get(Agent, i) for i in ids) if a is not None]
    if role == AGENT_ROLE and issue.assignee_type == "agent":
        agent = session.get(Agent, issue.assignee_id)
        return [agent] if agent else []
    return []


def bind(session: Session, workspace_id: str, project_id: str, role: str, principal_type: str,
         principal_id: str) -> RoleBinding:
    if principal_type not in ("agent", "member"):
        raise Invalid("a role is bound to an agent or a member")
    role = role.strip().lower()
    if not role or len(role) > 100:
        raise Invalid("a role needs a name of 1-100 characters")
    existing = session.scalar(select(RoleBinding).where(
        RoleBinding.project_id == project_id, RoleBinding.role == role,
        RoleBinding.principal_type == principal_type, RoleBinding.principal_id == principal_id))
    if existing:
        return existing
    b = RoleBinding(workspace_id=workspace_id, project_id=project_id, role=role, principal_type=principal_type,
                    principal_id=principal_id)
    session.add(b)
    session.flush()
    return b


def list_bindings(session: Session, project_id: str) -> list[RoleBinding]:
    return list(session.scalars(select(RoleBinding).where(RoleBinding.project_id == project_id)
                                .order_by(RoleBinding.role, RoleBinding.created_at)))
