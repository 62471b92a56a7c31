"""An issue's version: every change of a field a person edits bumps it, records who made it, and
is announced on the workspace's event stream once committed (issue 26 §1).

One flush hook, so a change made anywhere through the ORM — a person's edit, an agent's status,
a merged pull request, a workflow step — counts, and open pages update live. The task lifecycle's
own hot UPDATEs (claimed → in_progress, finished → in_review) announce themselves as task events;
pages refresh the issue on those too.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session, attributes

from ..store.schema import Agent, Issue, User, utcnow
from .auth import Principal, task_of
from .errors import Conflict
from .events import emit

#: The fields a person edits, each one saved on its own.
TRACKED = ("title", "body", "status", "priority", "assignee_id")
ACTOR = "issue_actor"


def act_as(session: Session, name: str | None) -> None:
    """Who the issue changes of this transaction are by, in words (a person's or agent's name)."""
    session.info[ACTOR] = name


def actor_name(session: Session, principal: Principal) -> str | None:
    """The person's name, or the agent's whose task token it is."""
    if principal.kind == "task":
        task = task_of(session, principal)
        agent = session.get(Agent, task.agent_id) if task is not None else None
        return agent.name if agent is not None else None
    user = session.get(User, principal.user_id) if principal.user_id else None
    return user.name if user is not None else None


class EditConflict(Conflict):
    """A field changed by someone else after the version the editor saw: nothing is saved, and the
    answer carries the value now stored and who stored it, so a page can offer both."""

    def __init__(self, message: str, *, field: str, current: Any, by: str | None, version: int):
        super().__init__(message)
        self.field, self.current, self.by, self.version = field, current, by, version

    def answer(self) -> dict[str, Any]:
        return {"detail": self.message, "field": self.field, "current": self.current, "by": self.by,
                "version": self.version}


def check_fresh(issue: Issue, field: str, wanted: Any, seen: int | None, shown: Any = None) -> None:
    """Refuse to overwrite `field` when it changed after version `seen` to something else than
    `wanted` (the same value twice is no conflict). `shown` is the current value in words."""
    if seen is None:
        return
    stamp = changed_by(issue, field)
    current = getattr(issue, field)
    if stamp is None or stamp["v"] <= seen or current == wanted:
        return
    name = "assignee" if field == "assignee_id" else field
    words = shown if shown is not None else current
    who = stamp.get("by") or "someone"
    words_text = f"“{words}”" if words not in (None, "") else "nothing"
    if field == "body":
        words_text = "a new text"
    raise EditConflict(f"{who} changed the {name} to {words_text} after you loaded this issue (version {seen}; "
                       f"it is now {issue.version}), so your change was not saved. Keep theirs, or save yours "
                       f"again to replace it.", field=name, current=words, by=stamp.get("by"), version=issue.version)


def changed_by(issue: Issue, field: str) -> dict[str, Any] | None:
    """{"v": version, "by": name or None, "at": ISO time} of the last change of `field`, if recorded."""
    return (issue.field_changes or {}).get(field)


def _changed_fields(issue: Issue) -> list[str]:
    return [f for f in TRACKED if attributes.get_history(issue, f).has_changes()]


@event.listens_for(Session, "before_flush")
def _bump_versions(session: Session, _context: Any, _instances: Any) -> None:
    for obj in list(session.dirty):
        if not isinstance(obj, Issue) or not session.is_modified(obj, include_collections=False):
            continue
        fields = _changed_fields(obj)
        if not fields:
            continue
        version = (obj.version or 1) + 1
        by = session.info.get(ACTOR)
        stamp = {"v": version, "by": by, "at": utcnow().isoformat()}
        obj.field_changes = {**(obj.field_changes or {}), **{f: stamp for f in fields}}
        obj.version = version
        emit(session, obj.workspace_id, "issue_changed", issue_id=obj.id, number=obj.number,
             version=version, fields=["assignee" if f == "assignee_id" else f for f in fields], by=by)
