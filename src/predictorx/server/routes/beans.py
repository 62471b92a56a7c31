"""Beans under an issue: create (idempotent), list, show, claim, note, resolve, scrap, export and
import in hmans/beans' Markdown format (R-HAR-6). Agents act on their task's issue only."""

from __future__ import annotations

from typing import Literal, Optional

from fastapi import APIRouter, Depends, Header
from pydantic import BaseModel, ConfigDict, Field

from ...harness import beanfile, beans as svc
from ...service.errors import Invalid
from ..deps import Caller, get_caller, get_state
from ..state import AppState
from .workflows import issue_for

router = APIRouter(tags=["beans"])


class BeanIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=500)
    body: str = Field(default="", max_length=100_000)


class BeanOp(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: Optional[str] = Field(default=None, max_length=10_000, description="The note, or the scrap reason.")
    if_version: Optional[int] = Field(default=None, ge=1)


class ImportIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    files: dict[str, str] = Field(max_length=1000, description="File name → Markdown text.")


def _by(caller: Caller) -> str:
    p = caller.principal
    return f"task {p.task_id}" if p.kind == "task" else f"user {p.user_id}"


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
        bean, created = svc.create(s, issue_for(s, caller, ref), body.title, body.body, _by(caller))
        return {**svc.as_dict(bean), "created": created}


@router.get("/api/issues/{ref}/beans/export")
def export(ref: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        issue = issue_for(s, caller, ref)
        out = {}
        for b in svc.list_beans(s, issue):
            d = svc.as_dict(b)
            out[beanfile.filename(d)] = beanfile.dump(d, issue.number)
        return {"files": out}


@router.post("/api/issues/{ref}/beans/import")
def import_(ref: str, body: ImportIn, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    parsed = {}
    for name, text in sorted(body.files.items()):
        try:
            parsed[name] = beanfile.load(text)
        except beanfile.BeanFileError as e:
            raise Invalid(f"{name}: {e}") from None
    with state.write() as s:  # all files or none
        issue = issue_for(s, caller, ref)
        out = []
        for name, data in parsed.items():
            bean, created = svc.create(s, issue, data["title"], data["body"], _by(caller))
            if created and data["status"] != "created":
                if data["status"] == "in-progress":
                    svc.claim(s, bean, _by(caller))
                elif data["status"] == "resolved":
                    svc.resolve(s, bean, _by(caller))
                else:
                    svc.scrap(s, bean, f"scrapped in the imported file {name}", _by(caller))
            out.append({**svc.as_dict(bean), "created": created, "file": name})
        return {"beans": out}


@router.get("/api/issues/{ref}/beans/{bean}")
def show(ref: str, bean: str, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        return svc.as_dict(svc.get(s, issue_for(s, caller, ref), bean))


@router.post("/api/issues/{ref}/beans/{bean}/{op}")
def operate(ref: str, bean: str, op: Literal["claim", "note", "resolve", "scrap"], body: BeanOp,
            if_match: Optional[str] = Header(default=None, max_length=40), caller: Caller = Depends(get_caller),
            state: AppState = Depends(get_state)) -> dict:
    with state.write() as s:
        b = svc.get(s, issue_for(s, caller, ref), bean)
        version = _etag(if_match, body.if_version)
        if op == "claim":
            svc.claim(s, b, _by(caller), version)
        elif op == "note":
            svc.note(s, b, body.text or "", _by(caller), version)
        elif op == "resolve":
            svc.resolve(s, b, _by(caller), version)
        else:
            svc.scrap(s, b, body.text or "", _by(caller), version)
        return svc.as_dict(b)
