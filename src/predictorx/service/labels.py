"""Labels (issue 26 §3): a workspace's named, coloured labels, set on and taken off issues. The
API, the CLI (`predictorx label …`, `predictorx issue label …`) and the issue page call these."""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from ..store.label_schema import IssueLabel, Label
from ..store.schema import Issue, utcnow
from .errors import Conflict, Invalid, NotFound

_COLOR = re.compile(r"^#[0-9a-f]{6}$")
#: Colours a new label takes in turn when none is given; each keeps 4.5:1 with white text.
PALETTE = ("#b42318", "#b54708", "#027a48", "#175cd3", "#6941c6", "#c11574", "#3e4784", "#475467")
NAME_MAX = 50


def _name(name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise Invalid("a label needs a name")
    if len(name) > NAME_MAX:
        raise Invalid(f"a label's name has at most {NAME_MAX} characters")
    return name


def _color(color: str | None, session: Session, workspace_id: str) -> str:
    if not color:
        used = session.scalar(select(func.count()).select_from(Label).where(Label.workspace_id == workspace_id)) or 0
        return PALETTE[used % len(PALETTE)]
    color = color.strip().lower()
    if not color.startswith("#"):
        color = "#" + color
    if not _COLOR.match(color):
        raise Invalid("a label's colour is written #rrggbb, for example #175cd3")
    return color


def list_labels(session: Session, workspace_id: str) -> list[Label]:
    return list(session.scalars(select(Label).where(Label.workspace_id == workspace_id).order_by(func.lower(Label.name))))


def find_label(session: Session, workspace_id: str, ref: str) -> Label | None:
    """By id or by name (case does not matter)."""
    label = session.get(Label, ref)
    if label is not None and label.workspace_id == workspace_id:
        return label
    return session.scalar(select(Label).where(Label.workspace_id == workspace_id,
                                              func.lower(Label.name) == " ".join(ref.split()).lower()))


def get_label(session: Session, workspace_id: str, ref: str) -> Label:
    label = find_label(session, workspace_id, ref)
    if label is None:
        raise NotFound(f"no label named {ref!r}; `predictorx label list` shows the labels")
    return label


def create_label(session: Session, workspace_id: str, name: str, color: str | None = None) -> Label:
    name = _name(name)
    if find_label(session, workspace_id, name) is not None:
        raise Conflict(f"a label named {name!r} already exists")
    label = Label(workspace_id=workspace_id, name=name, color=_color(color, session, workspace_id))
    session.add(label)
    session.flush()
    return label


def change_label(session: Session, workspace_id: str, ref: str, *, name: str | None = None,
                 color: str | None = None) -> Label:
    label = get_label(session, workspace_id, ref)
    if name is not None:
        name = _name(name)
        other = find_label(session, workspace_id, name)
        if other is not None and other.id != label.id:
            raise Conflict(f"a label named {name!r} already exists")
        label.name = name
    if color is not None:
        label.color = _color(color, session, workspace_id)
    session.flush()
    return label


def delete_label(session: Session, workspace_id: str, ref: str) -> None:
    """The label goes, and with it from every issue that carried it."""
    label = get_label(session, workspace_id, ref)
    session.execute(delete(IssueLabel).where(IssueLabel.label_id == label.id))
    session.delete(label)
    session.flush()


def add_to_issue(session: Session, issue: Issue, ref: str) -> Label:
    """Put a label on an issue; a name no label has yet makes that label (as Linear does)."""
    label = find_label(session, issue.workspace_id, ref) or create_label(session, issue.workspace_id, ref)
    if session.get(IssueLabel, (issue.id, label.id)) is None:
        session.add(IssueLabel(issue_id=issue.id, label_id=label.id))
        issue.updated_at = utcnow()
        session.flush()
    return label


def remove_from_issue(session: Session, issue: Issue, ref: str) -> None:
    label = get_label(session, issue.workspace_id, ref)
    row = session.get(IssueLabel, (issue.id, label.id))
    if row is not None:
        session.delete(row)
        issue.updated_at = utcnow()
        session.flush()


def labels_of(session: Session, issue_ids: Iterable[str]) -> dict[str, list[Label]]:
    """issue id → its labels by name, for a page of rows in one query."""
    ids = list(issue_ids)
    out: dict[str, list[Label]] = {i: [] for i in ids}
    if not ids:
        return out
    rows = session.execute(select(IssueLabel.issue_id, Label).join(Label, Label.id == IssueLabel.label_id)
                           .where(IssueLabel.issue_id.in_(ids)).order_by(func.lower(Label.name)))
    for issue_id, label in rows:
        out[issue_id].append(label)
    return out
