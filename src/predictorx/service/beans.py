"""Beans: PR-sized work items under an issue (R-HAR-6).

created → in-progress → resolved, or scrapped with a reason. A bean is an hmans/beans bean too
(R-HAR-11): `key` is its beans id, unique under the issue, and the beans fields travel through
bean_files.py. Create is idempotent (the same title under the same issue, asked again, returns the
bean that has it; an import may bring two beans with one title, and they stay two: files are
matched by id, never by title); every change takes the bean's etag (`version`) when the
caller has one, so two writers never silently overwrite each other. Every status change is a
journal entry in the notes (`op`, who: a person, or an agent and its task). The engine performs
claim, note, resolve — only when its instance completes (otherwise it notes) — and scrap; a step
that names a bean makes it its instance's, and while that instance runs its status changes only
through its steps (bean_rules.py). Nothing here touches the issue's status: an agent never closes
an issue.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Issue, new_id, utcnow
from ..store.workflow_schema import Bean
from ..workflows import beanfile
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


def new_key(bean_id: str) -> str:
    """The beans id of a bean made here (what its exported file is named by)."""
    return f"px-{bean_id[:8]}"


def _by_title(session: Session, issue: Issue, title: str) -> list[Bean]:
    return list(session.scalars(select(Bean).where(Bean.issue_id == issue.id, Bean.title == title)
                                .order_by(Bean.created_at, Bean.key)))


_TAG = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")  # beans' tag rule (pkg/bean/bean.go)
_WORD = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


def beans_fields(type: str | None = None, priority: str | None = None, tags: list[str] | None = None,
                 parent: str | None = None, blocking: list[str] | None = None) -> dict[str, Any]:
    """The hmans/beans fields a bean is made with, checked: the parent and blocking are bean ids."""
    for name, word in (("type", type), ("priority", priority)):
        if word is not None and not _WORD.match(word):
            raise Invalid(f"a bean's {name} is one lower-case word (as beans' milestone, feature, normal, high)")
    bad = [t for t in tags or [] if not _TAG.match(t)]
    if bad:
        raise Invalid(f"tag {bad[0]!r} is not a beans tag: lower case, a letter first, words joined by '-'")
    for ref in ([parent] if parent else []) + list(blocking or []):
        if not beanfile.ID.match(ref) or re.match(r"^issue-\d+$", ref):
            raise Invalid(f"{ref!r} is not a bean id (a bean's parent and blocking name beans, never an issue)")
    return {"type": type, "priority": priority, "tags": list(dict.fromkeys(tags or [])) or None, "parent": parent,
            "blocking": list(dict.fromkeys(blocking or [])) or None}


def create(session: Session, issue: Issue, title: str, body: str = "", by: str | None = None,
           fields: dict[str, Any] | None = None) -> tuple[Bean, bool]:
    """`fields`: beans_fields(), for a new bean only (the existing one is returned as it is)."""
    title = _title(title)
    # creates under one issue take turns (PostgreSQL row lock; SQLite writes are serial anyway), so
    # a title asked for twice at once is still one bean
    session.execute(select(Issue.id).where(Issue.id == issue.id).with_for_update())
    existing = _by_title(session, issue, title)
    if existing:
        return existing[0], False
    bean_id = new_id()
    bean = Bean(id=bean_id, key=new_key(bean_id), workspace_id=issue.workspace_id, issue_id=issue.id, title=title,
                body=body or "", notes=[], claimed_by=None, **(fields or {}))
    session.add(bean)
    session.flush()
    return bean, True


def list_beans(session: Session, issue: Issue) -> list[Bean]:
    return list(session.scalars(select(Bean).where(Bean.issue_id == issue.id)
                                .order_by(Bean.created_at, Bean.title, Bean.key)))


def get(session: Session, issue: Issue, ref: str) -> Bean:
    """By id, by beans id (`key`), or by a title only one bean of the issue has."""
    ref = (ref or "").strip()
    bean = session.get(Bean, ref)
    if bean is not None and bean.issue_id == issue.id:
        return bean
    bean = session.scalar(select(Bean).where(Bean.issue_id == issue.id, Bean.key == ref))
    if bean is not None:
        return bean
    titled = _by_title(session, issue, " ".join(ref.split()))
    if len(titled) > 1:
        raise Conflict(f"{len(titled)} beans of issue #{issue.number} are titled {ref!r}; name one by its id: "
                       + ", ".join(b.key for b in titled))
    if not titled:
        raise NotFound(f"issue #{issue.number} has no bean {ref!r}; `predictorx bean list {issue.number}` shows them")
    return titled[0]


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
    bean.status, bean.claimed_by, bean.draft = "in-progress", by, False
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
    return {"id": bean.id, "key": bean.key, "issue_id": bean.issue_id, "title": bean.title, "body": bean.body,
            "status": bean.status, "draft": bool(bean.draft), "type": bean.type, "priority": bean.priority,
            "tags": list(bean.tags or []), "parent": bean.parent, "blocking": list(bean.blocking or []),
            "blocked_by": list(bean.blocked_by or []), "order": bean.sort_order, "file": bean.file_path,
            "notes": bean.notes, "scrap_reason": bean.scrap_reason,
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
    except (NotFound, Conflict) as e:
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
