"""Beans under an issue: create (idempotent), list, show, claim, note, resolve, scrap, export and
import as an hmans/beans folder (R-HAR-6, R-HAR-11; service/bean_files.py). Agents act on their task's issue only; a bean
that belongs to a running workflow changes status only through its steps, or by a person with
its role — recorded in the instance's history; a refused attempt is recorded too (bean_rules)."""

from __future__ import annotations

from typing import Literal, Optional

from fastapi import APIRouter, Depends, Header
from pydantic import BaseModel, ConfigDict, Field

from ...service import bean_files, bean_rules
from ...service import beans as svc
from ...service import workflow_instances as inst_svc
from ...service.errors import Invalid
from ..deps import Caller, get_caller, get_state
from ..state import AppState
from .workflows import actor_for, issue_for, library

router = APIRouter(tags=["beans"])


class BeanIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=500)
    body: str = Field(default="", max_length=100_000)
    type: Optional[str] = Field(default=None, max_length=40, description="beans' type: task, feature, bug, epic, milestone")
    priority: Optional[str] = Field(default=None, max_length=40, description="beans' priority: critical … deferred")
    tags: list[str] = Field(default_factory=list, max_length=50)
    parent: Optional[str] = Field(default=None, max_length=100, description="A bean id (beans-18db), never an issue.")
    blocking: list[str] = Field(default_factory=list, max_length=100, description="Ids of the beans this one blocks.")


class BeanOp(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: Optional[str] = Field(default=None, max_length=10_000, description="The note, or the scrap reason.")
    if_version: Optional[int] = Field(default=None, ge=1)


class ImportIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    files: dict[str, str] = Field(max_length=5000, description="Path under .beans/ (`archive/x.md`) → Markdown text.")
    strict: bool = Field(default=False, description="All files or none: one refused file refuses the import.")
    etags: Optional[dict[str, int]] = Field(default=None, max_length=5000,
                                            description="Bean id → the etag the folder was exported with.")


def _by(s, caller: Caller, issue) -> str:
    """A person, or an agent and its task: who the bean's journal names."""
    return bean_rules.attribution(*actor_for(s, caller, issue, None))


def _etag(if_match: str | None, body_version: int | None) -> int | None:
    if if_match:
        try:
            return int(if_match.strip().strip('"').removeprefix("W/").strip('"'))
        except ValueError:
            raise Invalid("If-Match must be the bean's etag (a number)") from None
    return body_version


@router.get("/api/issues/{ref}/beans")
def list_beans(ref: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [svc.as_dict(b) for b in svc.list_beans(s, issue_for(s, caller, ref))]


@router.post("/api/issues/{ref}/beans")
def create(ref: str, body: BeanIn, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        issue = issue_for(s, caller, ref)
        fields = svc.beans_fields(body.type, body.priority, body.tags, body.parent, body.blocking)
        bean, created = svc.create(s, issue, body.title, body.body, _by(s, caller, issue), fields)
        return {**svc.as_dict(bean), "created": created}


@router.get("/api/issues/{ref}/beans/export")
def export(ref: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        return bean_files.export(s, issue_for(s, caller, ref))


@router.post("/api/issues/{ref}/beans/import")
def import_(ref: str, body: ImportIn, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    """Per file: created, updated, unchanged or refused (with a sentence); the valid files are
    imported, or with `strict` all or none. Matched by beans id, never by title."""
    with state.write() as s:
        issue = issue_for(s, caller, ref)
        return bean_files.import_files(s, issue, body.files, _by(s, caller, issue), strict=body.strict,
                                       etags=body.etags)


@router.get("/api/issues/{ref}/beans/{bean}")
def show(ref: str, bean: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        return svc.as_dict(svc.get(s, issue_for(s, caller, ref), bean))


@router.post("/api/issues/{ref}/beans/{bean}/{op}")
def operate(ref: str, bean: str, op: Literal["claim", "note", "resolve", "scrap"], body: BeanOp,
            if_match: Optional[str] = Header(default=None, max_length=40), caller: Caller = Depends(get_caller),
            state: AppState = Depends(get_state)) -> dict:
    try:
        with state.write() as s:
            issue = issue_for(s, caller, ref)
            b = svc.get(s, issue, bean)
            version = _etag(if_match, body.if_version)
            # the workflow library (and the actor's roles) matter only for a bean a workflow holds
            lib = library() if op in bean_rules.STATUS_OPS and bean_rules.governing(s, b) else None
            actor, task_id = actor_for(s, caller, issue, lib)
            outside = bean_rules.outside_steps(s, lib, b, op, actor, task_id) if lib else None
            by = bean_rules.attribution(actor, task_id)
            if outside:
                by += f" (role {outside[1] or 'none'}, outside the steps of workflow {outside[0].process_id})"
            _apply(s, b, op, body.text, by, version)
            if outside:
                bean_rules.record_outside(s, lib, outside[0], b, op, actor, outside[1], body.text)
            return svc.as_dict(b)
    except inst_svc.StepForbidden as e:
        if e.record:  # the refused attempt is part of the instance's record, repeats counted
            with state.write() as s:
                counted = inst_svc.record_refusal(s, e.record)
            if counted:
                raise inst_svc.StepForbidden(f"{e}; {counted}") from None
        raise


def _apply(s, b, op: str, text: str | None, by: str, version: int | None) -> None:
    if op == "claim":
        svc.claim(s, b, by, version)
    elif op == "note":
        svc.note(s, b, text or "", by, version)
    elif op == "resolve":
        svc.resolve(s, b, by, version)
    else:
        svc.scrap(s, b, text or "", by, version)
