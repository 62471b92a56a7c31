"""The command palette's answers (issue 26 §3, Ctrl-K): issues by number or by words, projects
and agents by name, a few of each, for one workspace."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Issue, Project
from .issue_search import IssueQuery, IssueSearch

EACH = 6


@dataclass
class Found:
    issues: list[Issue] = field(default_factory=list)
    projects: list[Project] = field(default_factory=list)
    agents: list[Agent] = field(default_factory=list)


def _like(text: str) -> str:
    return "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def quick_find(session: Session, workspace_id: str, text: str) -> Found:
    text = " ".join(text.split())[:200]
    found = Found()
    if not text:  # an empty palette: the latest issues
        found.issues = IssueSearch(session, workspace_id, IssueQuery(sort="updated")).rows(limit=EACH)
        return found
    number = text.lstrip("#")
    if number.isdigit() and len(number) < 10:
        hit = session.scalar(select(Issue).where(Issue.workspace_id == workspace_id, Issue.number == int(number)))
        found.issues = [hit] if hit is not None else []
    found.issues += [i for i in IssueSearch(session, workspace_id, IssueQuery(search=text, sort="updated")).rows(limit=EACH)
                     if i not in found.issues][:EACH - len(found.issues)]
    pattern = _like(text)
    found.projects = list(session.scalars(select(Project).where(
        Project.workspace_id == workspace_id, func.lower(Project.title).like(pattern, escape="\\"))
        .order_by(Project.title).limit(EACH)))
    found.agents = list(session.scalars(select(Agent).where(
        Agent.workspace_id == workspace_id, Agent.archived_at.is_(None), func.lower(Agent.name).like(pattern, escape="\\"))
        .order_by(Agent.name).limit(EACH)))
    return found
