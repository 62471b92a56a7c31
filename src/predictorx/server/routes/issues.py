from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, Depends, Query, Response
from fastapi.encoders import jsonable_encoder

from ...service import issues as svc
from ...service import auth, issue_deletion, issue_search, labels, runnability, serialize, tasks, workflow_reply
from ...service.issue_versions import EditConflict
from ..deps import Caller, get_caller, get_state, user_caller
from ..models import Assign, CommentIn, IssueCreate, IssueUpdate
from ..safejson import SafeJSONResponse
from ..state import AppState

if TYPE_CHECKING:  # annotations only: routes and pages reach the database through the services
    from ...store.schema import Issue

router = APIRouter(prefix="/api/issues", tags=["issues"])


def _out(s, issue: Issue) -> dict:
    return serialize.issue(issue, svc.assignee_name(s, issue))


@router.get("")
def list_issues(project: list[str] = Query(default=[], max_length=200),
                status: list[str] = Query(default=[], max_length=200),
                priority: list[str] = Query(default=[], max_length=200),
                assignee: list[str] = Query(default=[], max_length=200),
                label: list[str] = Query(default=[], max_length=200),
                search: str | None = Query(default=None, max_length=1000),
                sort: str | None = Query(default=None, max_length=20),
                limit: int = Query(default=200, ge=1, le=1000), offset: int = Query(default=0, ge=0, le=10_000_000),
                caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    """Filters (`a,b` or repeated: any of them; labels: all of them), `search` (words of the
    issue or its comments, as prefixes) and `sort`: the issue list's own query (issue 26 §3)."""
    query = issue_search.IssueQuery.parse(status=status, priority=priority, project=project, assignee=assignee,
                                          label=label, search=search, sort=sort)
    with state.read() as s:
        found = issue_search.IssueSearch(s, caller.workspace_id, query, caller.user_id).rows(offset=offset, limit=limit)
        names = labels.labels_of(s, [i.id for i in found])
        return [{**_out(s, i), "labels": [serialize.label(x) for x in names[i.id]]} for i in found]


# The answers of the routes each agent task calls are encoded here, in the route's thread: FastAPI
# validated a returned dict against the route's return type in a second trip to the thread pool.
@router.post("", status_code=201, response_model=None)
def create_issue(body: IssueCreate, caller: Caller = Depends(user_caller),
                 state: AppState = Depends(get_state)) -> Response:
    with state.write() as s:
        issue = svc.create_issue(s, caller.workspace_id, caller.user_id, **body.model_dump())
        out = _out(s, issue)
    return SafeJSONResponse(out, status_code=201)


# The two answers that carry every comment (up to megabytes) are encoded here, in the route's
# thread: FastAPI would encode a returned dict on the event loop (issue 29 §5).
@router.get("/{ref}", response_model=None)
def get_issue(ref: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> Response:
    with state.read() as s:
        issue = svc.issue_for(s, caller.principal, caller.workspace_id, ref)
        out = _out(s, issue)
        out["comments"] = [serialize.comment(c) for c in svc.list_comments(s, issue)]
        return SafeJSONResponse(jsonable_encoder(out))


@router.patch("/{ref}", response_model=None)
def update_issue(ref: str, body: IssueUpdate, caller: Caller = Depends(get_caller),
                 state: AppState = Depends(get_state)) -> dict | Response:
    """Only the fields given; with `version`, a field someone changed since answers 409 with the
    value now stored and who stored it (nothing is saved)."""
    changes = body.model_dump(exclude_unset=True, exclude_none=True)
    version = changes.pop("version", None)
    try:
        with state.write() as s:
            issue = svc.change_issue(s, caller.principal, caller.workspace_id, ref, changes, version)
            return _out(s, issue)
    except EditConflict as e:  # outside the transaction: it rolled back, nothing changed
        return SafeJSONResponse(e.answer(), status_code=409)


@router.delete("/{ref}")
def delete_issue(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    """Owners and admins: the issue with its comments, runs, pull-request records and workflows."""
    with state.write() as s:
        return issue_deletion.delete_issue(s, caller.principal, caller.workspace_id, ref)


@router.post("/{ref}/assign", response_model=None)
def assign(ref: str, body: Assign, caller: Caller = Depends(user_caller),
           state: AppState = Depends(get_state)) -> dict | Response:
    try:
        with state.write() as s:
            issue, task = svc.assign_checked(s, caller.principal, caller.workspace_id, ref, body.assignee, body.version)
            out = _out(s, issue)
            out["task"] = serialize.task(task) if task else None
            return out
    except EditConflict as e:
        return SafeJSONResponse(e.answer(), status_code=409)


@router.get("/{ref}/comments", response_model=None)
def list_comments(ref: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> Response:
    with state.read() as s:
        issue = svc.issue_for(s, caller.principal, caller.workspace_id, ref)
        return SafeJSONResponse(jsonable_encoder([serialize.comment(c) for c in svc.list_comments(s, issue)]))


@router.post("/{ref}/comments", status_code=201)
def add_comment(ref: str, body: CommentIn, caller: Caller = Depends(get_caller),
                state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        issue = svc.issue_for(s, caller.principal, caller.workspace_id, ref)
        if caller.principal.kind == "task":
            agent_id = auth.task_of(s, caller.principal).agent_id
            text = workflow_reply.with_position(s, issue, agent_id, body.body)
            c = svc.add_comment(s, issue, body=text, author_type="agent", author_id=agent_id)
        else:
            c = svc.add_comment(s, issue, body=body.body, author_type="member", author_id=caller.user_id)
        return serialize.comment(c)


@router.get("/{ref}/runs", response_model=None)
def runs(ref: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> Response:
    with state.read() as s:
        issue = svc.get_issue(s, caller.workspace_id, ref)
        out = []
        for t, agent in tasks.runs_of_issue(s, issue):
            row = serialize.task(t, agent.name if agent else None, issue.number)
            row["wait_reason"] = runnability.queued_reason(s, t, agent)
            out.append(row)
    return SafeJSONResponse(out)
