"""Finding issues (issue 26 §3): filters (status, priority, project, assignee, label), full-text
search over issues and their comments, sort and group. One `IssueQuery` is what the issue list's
URL says (a saved view is its link), what `GET /api/issues?…` takes and what `predictorx issue
list --status … --search …` sends; the board reads the same query, one column per status.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from dataclasses import dataclass, fields, replace
from urllib.parse import urlencode

from sqlalchemy import Select, and_, case, false, func, or_, select
from sqlalchemy.orm import Session, aliased

from ..store import fulltext
from ..store.label_schema import IssueLabel
from ..store.schema import Agent, Issue, Member, Project, User
from .agents import find_agent
from .errors import Invalid, NotFound
from .issues import ISSUE_STATUSES
from .labels import find_label
from .projects import PRIORITIES

SORTS = {"newest": "Newest", "oldest": "Oldest", "updated": "Recently updated", "priority": "Priority",
         "title": "Title"}
GROUPS = {"": "No grouping", "status": "Status", "priority": "Priority", "project": "Project",
          "assignee": "Assignee"}
NONE = "none"  # "no project" / "nobody" as a filter value
MAX_VALUES = 20
SEARCH_MAX = 200


def _values(raw: str | Iterable[str] | None) -> tuple[str, ...]:
    """`a,b` or repeated parameters (or both), trimmed, blanks and repeats dropped, order kept."""
    items = [raw] if isinstance(raw, str) else list(raw or [])
    out: list[str] = []
    for item in items:
        for v in item.split(","):
            v = v.strip()
            if len(v) > 200:
                raise Invalid("a filter's value has at most 200 characters")
            if v and v not in out:
                out.append(v)
    if len(out) > MAX_VALUES:
        raise Invalid(f"a filter takes at most {MAX_VALUES} values")
    return tuple(out)


def _check(name: str, given: tuple[str, ...], allowed: Iterable[str]) -> tuple[str, ...]:
    allowed = tuple(allowed)
    for v in given:
        if v not in allowed:
            raise Invalid(f"{name} must be one of {', '.join(allowed)} (not {v!r})")
    return given


@dataclass(frozen=True)
class IssueQuery:
    status: tuple[str, ...] = ()
    priority: tuple[str, ...] = ()
    project: tuple[str, ...] = ()   # project ids, or "none"
    assignee: tuple[str, ...] = ()  # agent or member names (or ids), "me", or "none"
    label: tuple[str, ...] = ()     # label names: an issue must carry all of them
    search: str = ""
    sort: str = "newest"
    group: str = ""

    @classmethod
    def parse(cls, *, status=None, priority=None, project=None, assignee=None, label=None,
              search: str | None = None, sort: str | None = None, group: str | None = None) -> IssueQuery:
        """From a query string or the API's parameters; a value no filter knows is a 422 sentence."""
        search = " ".join((search or "").split())
        if len(search) > SEARCH_MAX:
            raise Invalid(f"a search has at most {SEARCH_MAX} characters")
        sort = sort or "newest"
        if sort not in SORTS:
            raise Invalid(f"sort must be one of {', '.join(SORTS)}")
        group = group or ""
        if group not in GROUPS:
            raise Invalid(f"group must be one of {', '.join(g for g in GROUPS if g)}")
        return cls(status=_check("status", _values(status), ISSUE_STATUSES),
                   priority=_check("priority", _values(priority), PRIORITIES),
                   project=_values(project), assignee=_values(assignee), label=_values(label),
                   search=search, sort=sort, group=group)

    @property
    def filtered(self) -> bool:
        return bool(self.status or self.priority or self.project or self.assignee or self.label or self.search)

    def params(self, **changes: Any) -> list[tuple[str, str]]:
        """The query string's pairs, defaults left out: the saved view's link."""
        q = replace(self, **changes) if changes else self
        out: list[tuple[str, str]] = []
        for f in fields(q):
            value = getattr(q, f.name)
            if isinstance(value, tuple):
                out += [(f.name, v) for v in value]
            elif value and value != f.default:
                out.append((f.name, value))
        return out

    def query_string(self, **changes: Any) -> str:
        return urlencode(self.params(**changes))


@dataclass
class Resolved:
    """The query's names as the rows they name (one lookup each, before the SELECT)."""

    project_ids: list[str | None]
    assignees: list[tuple[str | None, str | None]]  # (type, id); (None, None): nobody
    label_ids: list[str]


def resolve(session: Session, workspace_id: str, q: IssueQuery, user_id: str | None) -> Resolved:
    projects: list[str | None] = []
    for ref in q.project:
        if ref == NONE:
            projects.append(None)
            continue
        p = session.get(Project, ref)
        if p is None or p.workspace_id != workspace_id:
            p = session.scalar(select(Project).where(Project.workspace_id == workspace_id, Project.title == ref))
        if p is None:
            raise Invalid(f"no project {ref!r}; `predictorx project list` shows the projects")
        projects.append(p.id)
    assignees: list[tuple[str | None, str | None]] = []
    for ref in q.assignee:
        if ref == NONE:
            assignees.append((None, None))
        elif ref == "me" and user_id:
            assignees.append(("member", user_id))
        else:
            assignees.append(_assignee(session, workspace_id, ref))
    labels = []
    for ref in q.label:
        label = find_label(session, workspace_id, ref)
        if label is None:
            raise Invalid(f"no label named {ref!r}; `predictorx label list` shows the labels")
        labels.append(label.id)
    return Resolved(projects, assignees, labels)


def _assignee(session: Session, workspace_id: str, ref: str) -> tuple[str, str]:
    try:
        return "agent", find_agent(session, workspace_id, ref).id
    except NotFound:
        pass
    user_id = session.scalar(select(User.id).join(Member, Member.user_id == User.id).where(
        Member.workspace_id == workspace_id, (User.id == ref) | (User.name == ref)))
    if user_id is None:
        raise Invalid(f"no agent or member named {ref!r}")
    return "member", user_id


def _filtered(session: Session, workspace_id: str, q: IssueQuery, r: Resolved, stmt: Select) -> Select:
    """The query's conditions on `stmt` (a SELECT from issue)."""
    stmt = stmt.where(Issue.workspace_id == workspace_id)
    if q.status:
        stmt = stmt.where(Issue.status.in_(q.status))
    if q.priority:
        stmt = stmt.where(Issue.priority.in_(q.priority))
    if r.project_ids:
        ids = [p for p in r.project_ids if p]
        stmt = stmt.where(or_(Issue.project_id.in_(ids), Issue.project_id.is_(None) if None in r.project_ids
                              else false()))
    if r.assignees:
        stmt = stmt.where(or_(*(Issue.assignee_id.is_(None) if kind is None
                                else and_(Issue.assignee_type == kind, Issue.assignee_id == ref)
                                for kind, ref in r.assignees)))
    for label_id in r.label_ids:
        stmt = stmt.where(Issue.id.in_(select(IssueLabel.issue_id).where(IssueLabel.label_id == label_id)))
    words = fulltext.terms(q.search)
    if words:  # joined, not `IN (…)`: the database walks the matches, not all the workspace's issues
        found = fulltext.matching_issue_ids(session.get_bind().dialect.name, words).subquery("found")
        stmt = stmt.join(found, found.c.issue_id == Issue.id)
    return stmt


def _rank(column, order: tuple[str, ...]):
    return case({v: i for i, v in enumerate(order)}, value=column, else_=len(order))


def _ordered(stmt: Select, q: IssueQuery) -> Select:
    keys = []
    if q.group == "status":
        keys.append(_rank(Issue.status, ISSUE_STATUSES))
    elif q.group == "priority":
        keys.append(_rank(Issue.priority, PRIORITIES[::-1]))
    elif q.group == "project":
        project = aliased(Project)
        stmt = stmt.outerjoin(project, project.id == Issue.project_id)
        keys += [Issue.project_id.is_(None), project.title, Issue.project_id]
    elif q.group == "assignee":
        agent, user = aliased(Agent), aliased(User)
        stmt = stmt.outerjoin(agent, and_(Issue.assignee_type == "agent", agent.id == Issue.assignee_id)) \
                   .outerjoin(user, and_(Issue.assignee_type == "member", user.id == Issue.assignee_id))
        keys += [Issue.assignee_id.is_(None), func.coalesce(agent.name, user.name), Issue.assignee_id]
    by_sort: dict[str, list[Any]] = {
        "newest": [Issue.number.desc()], "oldest": [Issue.number.asc()],
        "updated": [Issue.updated_at.desc(), Issue.number.desc()],
        "priority": [_rank(Issue.priority, PRIORITIES[::-1]), Issue.number.desc()],
        "title": [func.lower(Issue.title), Issue.number.desc()]}
    keys += by_sort[q.sort]
    return stmt.order_by(*keys)


class IssueSearch:
    """A query over one workspace, its names resolved once: the list's rows and count, or the
    board's column counts and columns."""

    def __init__(self, session: Session, workspace_id: str, q: IssueQuery, user_id: str | None = None) -> None:
        self.session, self.workspace_id, self.q = session, workspace_id, q
        self.resolved = resolve(session, workspace_id, q, user_id)

    def _where(self, stmt: Select) -> Select:
        return _filtered(self.session, self.workspace_id, self.q, self.resolved, stmt)

    def rows(self, *, offset: int = 0, limit: int = 50) -> list[Issue]:
        stmt = _ordered(self._where(select(Issue)), self.q)
        return list(self.session.scalars(stmt.offset(offset).limit(limit)))

    def count(self) -> int:
        return self.session.scalar(self._where(select(func.count(Issue.id)).select_from(Issue))) or 0

    def status_counts(self) -> dict[str, int]:
        """status → how many issues the query finds with it (the board's column counts)."""
        stmt = self._where(select(Issue.status, func.count(Issue.id)).select_from(Issue)).group_by(Issue.status)
        return {status: n for status, n in self.session.execute(stmt).all()}

    def column(self, status: str, *, offset: int = 0, limit: int = 10) -> list[Issue]:
        """One board column's cards, the most recently changed first (a card just moved is on top)."""
        stmt = self._where(select(Issue)).where(Issue.status == status)
        return list(self.session.scalars(stmt.order_by(Issue.updated_at.desc(), Issue.number.desc())
                                         .offset(offset).limit(limit)))
