"""A workspace's labels and an issue's labels (issue 26 §3): the CLI's `predictorx label …` and
`predictorx issue label …`; the issue page calls the same service (web/labels.py)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from ...service import issues as issue_svc
from ...service import labels as svc
from ...service import serialize
from ..deps import Caller, get_state, user_caller
from ..models import ShortName, Strict
from ..state import AppState

router = APIRouter(tags=["labels"])


class LabelIn(Strict):
    name: ShortName
    color: ShortName | None = None


class LabelChange(Strict):
    name: ShortName | None = None
    color: ShortName | None = None


class IssueLabelIn(Strict):
    label: ShortName


@router.get("/api/labels")
def list_labels(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [serialize.label(x) for x in svc.list_labels(s, caller.workspace_id)]


@router.post("/api/labels", status_code=201)
def create_label(body: LabelIn, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        return serialize.label(svc.create_label(s, caller.workspace_id, body.name, body.color))


@router.patch("/api/labels/{ref}")
def change_label(ref: str, body: LabelChange, caller: Caller = Depends(user_caller),
                 state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        return serialize.label(svc.change_label(s, caller.workspace_id, ref, name=body.name, color=body.color))


@router.delete("/api/labels/{ref}", status_code=204)
def delete_label(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> Response:
    with state.write() as s:
        svc.delete_label(s, caller.workspace_id, ref)
    return Response(status_code=204)


def _issue_labels(s, issue) -> list[dict]:
    return [serialize.label(x) for x in svc.labels_of(s, [issue.id])[issue.id]]


@router.get("/api/issues/{ref}/labels")
def issue_labels(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return _issue_labels(s, issue_svc.get_issue(s, caller.workspace_id, ref))


@router.post("/api/issues/{ref}/labels")
def add_issue_label(ref: str, body: IssueLabelIn, caller: Caller = Depends(user_caller),
                    state: AppState = Depends(get_state)) -> list[dict]:
    """Put a label on the issue (a new name makes the label); answers the issue's labels."""
    with state.write() as s:
        issue = issue_svc.get_issue(s, caller.workspace_id, ref)
        svc.add_to_issue(s, issue, body.label)
        return _issue_labels(s, issue)


@router.delete("/api/issues/{ref}/labels/{name}")
def remove_issue_label(ref: str, name: str, caller: Caller = Depends(user_caller),
                       state: AppState = Depends(get_state)) -> list[dict]:
    with state.write() as s:
        issue = issue_svc.get_issue(s, caller.workspace_id, ref)
        svc.remove_from_issue(s, issue, name)
        return _issue_labels(s, issue)
