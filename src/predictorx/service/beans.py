"""Beans: PR-sized work items under an issue (R-HAR-6).

created → in-progress → resolved, or scrapped with a reason. Create is idempotent (same title
under the same issue is the same bean); every change takes the bean's etag (`version`) when the
caller has one, so two writers never silently overwrite each other. Every status change is a
journal entry in the notes (`op`, who: a person, or an agent and its task). The engine performs
claim, note, resolve — only when its instance completes (otherwise it notes) — and scrap; a step
that names a bean makes it its instance's, and while that instance runs its status changes only
through its steps (bean_rules.py). Nothing here touches the issue's status: an agent never closes
an issue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..store.schema import Issue, utcnow
from ..store.workflow_schema import Bean
from .errors import Conflict, Invalid, NotFound
from .workflow_refusals import StepForbidden

STATUSES = ("created", "in-progress", "resolved", "scrapped")
_NEXT = {"claim": ("created",), "resolve": ("created", "in-progress"), "scrap": ("created", "in-progress"),
         "note": ("created", "in-progress", "resolved", "scrapped")}


def _title(title: str) -> str:
    title = " ".join((title or "").split())
    if not title or len(title) > 500:
        raise Invalid("a bean needs a title of 1-500 characters")
    return title


def create(session: Session, issue: Issue, title: str, body: str = "", by: str | None = None) -> tuple[Bean, bool]:
    title = _title(title)
    existing = session.scalar(select(Bean).where(Bean.issue_id == issue.id, Bean.title == title))
    if existing is not None:
        return existing, False
    bean = Bean(workspace_id=issue.workspace_id, issue_id=issue.id, title=title, body=body or "",
                notes=[], claimed_by=None)
    try:
        with session.begin_nested():
            session.add(bean)
            session.flush()
    except IntegrityError:  # a concurrent create of the same title won; it is the same bean
        return session.scalar(select(Bean).where(Bean.issue_id == issue.id, Bean.title == title)), False
    return bean, True


def list_beans(session: Session, issue: Issue) -> list[Bean]:
    return list(session.scalars(select(Bean).where(Bean.issue_id == issue.id).order_by(Bean.created_at, Bean.title)))


def get(session: Session, issue: Issue, ref: str) -> Bean:
    ref = (ref or "").strip()
    bean = session.get(Bean, ref)
    if bean is None or bean.issue_id != issue.id:
        bean = session.scalar(select(Bean).where(Bean.issue_id == issue.id, Bean.title == " ".join(ref.split())))
    if bean is None:
        raise NotFound(f"issue #{issue.number} has no bean {ref!r}; `predictorx bean list {issue.number}` shows them")
    return bean


def _check(bean: Bean, op: str, if_version: int | None) -> None:
    if if_version is not None and if_version != bean.version:
        raise Conflict(f"bean {bean.title!r} is at version {bean.version}, not {if_version}; read it again")
    if bean.status not in _NEXT[op]:
        raise Conflict(f"bean {bean.title!r} is {bean.status}; {op} needs it "
                       f"{' or '.join(_NEXT[op])}")


def _touch(bean: Bean) -> None:
    bean.version += 1
    bean.updated_at = utcnow()


def _note(bean: Bean, text: str, by: str | None, op: str | None = None) -> None:
    entry = {"at": utcnow().isoformat(), "by": by, "text": text}
    bean.notes = [*bean.notes, entry | {"op": op} if op else entry]


def claim(session: Session, bean: Bean, by: str, if_version: int | None = None) -> Bean:
    _check(bean, "claim", if_version)
    bean.status, bean.claimed_by = "in-progress", by
    _note(bean, "claimed", by, "claim")
    _touch(bean)
    return bean


def note(session: Session, bean: Bean, text: str, by: str | None, if_version: int | None = None) -> Bean:
    if not (text or "").strip():
        raise Invalid("a note needs text")
    _check(bean, "note", if_version)
    _note(bean, text.strip(), by)
    _touch(bean)
    return bean


def resolve(session: Session, bean: Bean, by: str | None, if_version: int | None = None) -> Bean:
    _check(bean, "resolve", if_version)
    bean.status = "resolved"
    _note(bean, "resolved", by, "resolve")
    _touch(bean)
    return bean


def scrap(session: Session, bean: Bean, reason: str, by: str | None, if_version: int | None = None) -> Bean:
    if not (reason or "").strip():
        raise Invalid("scrapping a bean needs a reason")
    _check(bean, "scrap", if_version)
    bean.status, bean.scrap_reason = "scrapped", reason.strip()
    _note(bean, f"scrapped: {reason.strip()}", by, "scrap")
    _touch(bean)
    return bean


def as_dict(bean: Bean) -> dict[str, Any]:
    return {"id": bean.id, "issue_id": bean.issue_id, "title": bean.title, "body": bean.body,
            "status": bean.status, "notes": bean.notes, "scrap_reason": bean.scrap_reason,
            "claimed_by": bean.claimed_by, "version": bean.version, "etag": str(bean.version),
            "created_at": bean.created_at.isoformat(), "updated_at": bean.updated_at.isoformat()}


# --- what a workflow step with <bean op=…> does -------------------------------------------------

@dataclass
class EngineBeanOp:
    bean: Bean
    op: str
    by: str


def engine_op(session: Session, issue: Issue, inst, op: str, passage, by: str) -> EngineBeanOp:
    """Before the engine moves: the step names its bean in `produced["bean"]` (id or title); the
    bean becomes the instance's. `by`: who takes the step (bean_rules.attribution)."""
    from .bean_rules import check_step_op

    step = passage.step
    ref = passage.produced.get("bean") or passage.facts.get("bean")
    if not ref:
        raise StepForbidden(f"{step.describe()} does `{op}` on a bean; pass produced bean=<id or title>")
    try:
        bean = get(session, issue, str(ref))
    except NotFound as e:
        raise StepForbidden(e.message) from None
    check_step_op(session, bean, inst, op, f"step {step.node.id!r}")
    passage.produced["bean"] = bean.id
    if bean.status in ("created", "in-progress"):  # a settled bean stays with the workflow that settled it
        bean.instance_id = inst.id
    by = f"{by} at workflow step {step.node.id}"
    if op == "claim":
        if bean.status == "created":
            claim(session, bean, by)
    elif op == "note":
        note(session, bean, passage.reason or passage.facts.get("note") or f"step {step.node.name} done", by)
    elif op == "scrap" and bean.status in ("created", "in-progress"):
        scrap(session, bean, passage.reason or str(passage.facts.get("reason") or "")
              or f"scrapped at workflow step {step.node.id}", by)
    return EngineBeanOp(bean, op, by)


def finish_resolve(session: Session, op: EngineBeanOp, *, instance_completed: bool, step: str) -> None:
    if instance_completed and op.bean.status in ("created", "in-progress"):
        resolve(session, op.bean, op.by)
    else:
        note(session, op.bean, f"step {step} done; the bean resolves when its workflow completes", op.by)
