"""Projects and their typed resources (R-RES-1 … R-RES-9)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from .. import resources as registry
from ..resources import ResourceError
from ..store.schema import ACTIVE_STATUSES, Daemon, Issue, Member, Project, ProjectResource, Runtime, Task
from .errors import Conflict, Forbidden, Invalid, NotFound

PROJECT_STATUSES = ("planned", "in_progress", "paused", "completed", "cancelled")
PRIORITIES = ("none", "low", "medium", "high", "urgent")


def get_project(session: Session, workspace_id: str, project_id: str) -> Project:
    p = session.get(Project, project_id)
    if p is None or p.workspace_id != workspace_id:
        raise NotFound(f"project {project_id!r} not found; `predictorx project list` shows the projects")
    return p


def find_project(session: Session, workspace_id: str, project_id: str | None) -> Project | None:
    """The project, or None (no id, or not one of this workspace's)."""
    p = session.get(Project, project_id) if project_id else None
    return p if p is not None and p.workspace_id == workspace_id else None


def list_projects(session: Session, workspace_id: str, *, by_title: bool = False,
                  oldest_first: bool = False) -> list[Project]:
    order = Project.title if by_title else Project.created_at if oldest_first else Project.created_at.desc()
    return list(session.scalars(select(Project).where(Project.workspace_id == workspace_id).order_by(order)))


def _per_project(session: Session, column, workspace_id: str, *where) -> dict[str, int]:
    q = (select(column, func.count()).join(Project, Project.id == column)
         .where(Project.workspace_id == workspace_id, *where).group_by(column))
    return dict(session.execute(q).all())


def project_counts(session: Session, workspace_id: str) -> dict[str, dict[str, int]]:
    """Per project, for the whole list in one query each: resources, open issues, active runs."""
    return {"resources": _per_project(session, ProjectResource.project_id, workspace_id),
            "open_issues": _per_project(session, Issue.project_id, workspace_id,
                                        Issue.status.not_in(("done", "cancelled"))),
            "active": _per_project(session, Task.project_id, workspace_id, Task.status.in_(ACTIVE_STATUSES))}


def update_project(session: Session, project: Project, **changes: str) -> Project:
    """title, description, status, priority, lead_id ("" clears the lead) — checked, then set."""
    if "title" in changes and not changes["title"].strip():
        raise Invalid("a project needs a title")
    if "status" in changes and changes["status"] not in PROJECT_STATUSES:
        raise Invalid(f"status must be one of {', '.join(PROJECT_STATUSES)}")
    if "priority" in changes and changes["priority"] not in PRIORITIES:
        raise Invalid(f"priority must be one of {', '.join(PRIORITIES)}")
    if "lead_id" in changes:
        lead = changes["lead_id"] or None
        if lead is not None and session.scalar(select(Member.user_id).where(
                Member.workspace_id == project.workspace_id, Member.user_id == lead)) is None:
            raise Invalid(f"lead {lead!r} is not a member of this workspace")
        changes["lead_id"] = lead
    for key, value in changes.items():
        setattr(project, key, value)
    session.flush()
    return project


def resource_machines(session: Session, workspace_id: str, resources: list[ProjectResource]) -> dict[str, str]:
    """resource id → the name of the machine a machine-local resource belongs to ("unknown
    machine" for a daemon id this workspace does not know), asked of each type's own hook."""
    from .. import resources as registry

    out: dict[str, str] = {}
    for r in resources:
        try:
            daemon_id = registry.get(r.resource_type).owner_daemon_id(r.resource_ref or {})
        except Exception:  # noqa: BLE001 — an unknown type or odd payload has no machine to show
            continue
        if daemon_id:
            d = session.get(Daemon, daemon_id)
            out[r.id] = d.name if d is not None and d.workspace_id == workspace_id else "unknown machine"
    return out


def list_resources(session: Session, project_id: str) -> list[ProjectResource]:
    return list(session.scalars(
        select(ProjectResource).where(ProjectResource.project_id == project_id)
        .order_by(ProjectResource.position, ProjectResource.created_at)))


def _check_owner_daemon(session: Session, workspace_id: str, actor_id: str | None,
                        handler: registry.ResourceType, ref: dict[str, Any]) -> None:
    """A machine-local resource names a daemon of this workspace (R-SEC-2), and only that daemon's
    owner points it at a folder on their machine (R-SEC-6: their agents will work there).
    R-RES-9: capability, not version, decides whether the owning daemon can run this."""
    owner = handler.owner_daemon_id(ref)
    if owner is None:
        return
    daemon = session.get(Daemon, owner)
    if daemon is None or daemon.workspace_id != workspace_id:  # the same words either way: no oracle
        raise Invalid(f"daemon {owner} is not registered in this workspace: on that machine run "
                      "`predictorx daemon start` (logged in to this workspace) so it registers, then add the "
                      "folder again; `predictorx daemon list` shows this workspace's daemons")
    if actor_id is not None and daemon.owner_id != actor_id:
        raise Forbidden(f"daemon {daemon.name} ({owner}) belongs to another member: only a machine's owner adds or "
                        "changes folders on it (their agents run there)")
    needed = handler.required_capabilities(ref)
    if not needed:
        return
    declared = set(daemon.capabilities or [])
    for rt in session.scalars(select(Runtime).where(Runtime.daemon_id == owner)):
        declared |= set(rt.capabilities or [])
    missing = sorted(needed - declared)
    if missing:
        raise Invalid(
            f"daemon {daemon.name} ({owner}) does not support {', '.join(missing)}; "
            "update Predictor X on that machine and restart its daemon, or use execution_mode in_place"
        )


def check_resource(session: Session, workspace_id: str, actor_id: str | None, resource_type: str, ref: Any,
                   label: str | None) -> tuple[registry.ResourceType, dict, str | None]:
    """The type's handler, the payload normalised and its label: a resource's one rule, applied
    by the daemon check before it asks (service/daemon_check.py) and by the saving transaction."""
    handler = registry.get(resource_type)
    if not isinstance(ref, dict):
        raise Invalid("resource_ref must be a JSON object")
    ref, label = registry.split_label(ref, label)
    ref = handler.normalize(ref)
    _check_owner_daemon(session, workspace_id, actor_id, handler, ref)
    return handler, ref, label


def _row(project_id: str, handler, ref, label, position, user_id) -> ProjectResource:
    return ProjectResource(project_id=project_id, resource_type=handler.name, resource_ref=ref,
                           label=label, position=position, unique_key=handler.unique_key(ref),
                           created_by=user_id)


def _flush_unique(session: Session, handler, ref) -> None:
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(handler.conflict_message(ref)) from None


def create_project(session: Session, workspace_id: str, user_id: str | None, *, title: str,
                   description: str = "", status: str = "planned", priority: str = "none",
                   lead_id: str | None = None, resources: list[dict] = ()) -> Project:
    """One transaction (R-RES-5): an invalid resource aborts the whole creation."""
    if status not in PROJECT_STATUSES:
        raise Invalid(f"status must be one of {', '.join(PROJECT_STATUSES)}")
    if priority not in PRIORITIES:
        raise Invalid(f"priority must be one of {', '.join(PRIORITIES)}")
    if lead_id is not None and session.scalar(
            select(Member.user_id).where(Member.workspace_id == workspace_id, Member.user_id == lead_id)) is None:
        raise Invalid(f"lead {lead_id!r} is not a member of this workspace")
    project = Project(workspace_id=workspace_id, title=title, description=description,
                      status=status, priority=priority, lead_id=lead_id)
    session.add(project)
    session.flush()
    for i, spec in enumerate(resources):
        try:
            handler, ref, label = check_resource(session, workspace_id, user_id, spec["resource_type"],
                                            spec.get("resource_ref"), spec.get("label"))
        except ResourceError as e:
            raise type(e)(f"resource {i + 1}: {e.message}", e.status) from None
        pos = spec.get("position")
        session.add(_row(project.id, handler, ref, label, i if pos is None else pos, user_id))
        _flush_unique(session, handler, ref)
    return project


def add_resource(session: Session, project: Project, user_id: str | None, *, resource_type: str,
                 resource_ref: Any, label: str | None = None, position: int | None = None) -> ProjectResource:
    handler, ref, label = check_resource(session, project.workspace_id, user_id, resource_type, resource_ref, label)
    if position is None:
        top = session.scalar(select(func.max(ProjectResource.position))
                             .where(ProjectResource.project_id == project.id))
        position = 0 if top is None else top + 1
    row = _row(project.id, handler, ref, label, position, user_id)
    session.add(row)
    _flush_unique(session, handler, ref)
    return row


def get_resource(session: Session, project: Project, resource_id: str) -> ProjectResource:
    row = session.get(ProjectResource, resource_id)
    if row is None or row.project_id != project.id:
        raise NotFound(f"resource {resource_id!r} not found in project {project.id}; "
                       f"`predictorx project resource list {project.id}` shows its resources")
    return row


def update_resource(session: Session, project: Project, resource_id: str, patch: dict[str, Any],
                    *, actor_id: str | None) -> ProjectResource:
    """Partial update: omitted fields are kept, fields set to null are cleared."""
    row = get_resource(session, project, resource_id)
    if "resource_type" in patch and patch["resource_type"] != row.resource_type:
        raise Invalid(f"resource_type cannot change (this one is {row.resource_type}); "
                      "remove the resource and add a new one")
    ref_patch = patch.get("resource_ref") or {}
    if not isinstance(ref_patch, dict):
        raise Invalid("resource_ref must be a JSON object")
    label = row.label
    if "label" in ref_patch:
        label = ref_patch.pop("label")
    if "label" in patch:
        label = patch["label"]
    if label is not None and not isinstance(label, str):
        raise Invalid("label must be a string or null")
    handler, ref, _ = check_resource(session, project.workspace_id, actor_id, row.resource_type,
                                registry.merge_patch(row.resource_ref, ref_patch), None)
    if actor_id is not None and actor_id != row.created_by and handler.adders_machines_only(ref):
        raise Forbidden(f"{handler.name} {ref.get('url') or ''} is a file:// repository, a folder on the machine that "
                        "fetches it: only the member who added this resource changes it (only their daemons "
                        "fetch it); add a resource of your own instead")
    row.resource_ref = ref
    row.label = label or None
    row.unique_key = handler.unique_key(ref)
    if patch.get("position") is not None:
        row.position = patch["position"]
    _flush_unique(session, handler, ref)
    return row


def remove_resource(session: Session, project: Project, resource_id: str) -> None:
    session.delete(get_resource(session, project, resource_id))


def delete_project(session: Session, workspace_id: str, project_id: str) -> None:
    session.delete(get_project(session, workspace_id, project_id))
