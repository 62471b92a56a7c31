"""Classifying issues and agent-addressed comments when they arrive, and recording judgements
where the table does not decide (R-HAR-2, issue 24 §6). The workspace's table (the shipped rules
plus its own: classification_rules.py) decides only when it is sure; then the category selects
the workflow, which starts at once for the issue (and becomes the active one of the addressed
agent's session). Otherwise nothing starts: the classification is pending with its question,
which the next task's prompt carries (the sweep, `pending_questions`) and the issue page shows,
and a judgement with a reason — the agent's (MCP `classification_judge`) or a person's — decides
it. Content authoring's workflow depends on the folio type (classify.py): where the folio table
cannot decide, the classification is pending with its category, and the judgement names the folio."""

from __future__ import annotations

import logging
import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, object_session

from ..store.schema import Agent, Comment, Issue
from ..store.workflow_schema import Classification, WorkflowInstance
from ..workflows.classify import CATEGORIES, FOLIO_TYPES, classify, workflow_of
from ..workflows.library import Library, active_library
from ..workflows.loader import DiagramError
from . import classification_rules, issue_hooks
from . import workflow_interaction as interaction
from .errors import Invalid, NotFound
from .workflow_dispatch import after_change

log = logging.getLogger("predictorx.workflows")
_MENTION = re.compile(r"(?<![\w.])@([A-Za-z0-9][A-Za-z0-9_.-]{0,99})")


def _workflow(c: Classification) -> str | None:
    """The workflow the classification started (content authoring's is by folio), else its category's."""
    s = object_session(c)
    inst = s.get(WorkflowInstance, c.instance_id) if c.instance_id and s is not None else None
    if inst is not None:
        return inst.process_id
    return workflow_of(c.category) if c.method != "pending" else None


def as_dict(c: Classification) -> dict[str, Any]:
    return {"id": c.id, "issue_id": c.issue_id, "comment_id": c.comment_id, "category": c.category,
            "method": c.method, "rule": c.rule, "reason": c.reason, "decided_by": c.decided_by,
            "workflow": _workflow(c), "instance_id": c.instance_id, "question": c.question,
            "candidates": list(c.candidates or []), "created_at": c.created_at.isoformat()}


def _route(session: Session, lib: Library, issue: Issue, c: Classification, agent_id: str | None,
           process: str | None, by_agent: Agent | None = None) -> None:
    from .workflow_instances import start

    if not process or process not in lib.processes:
        return
    inst, _ = start(session, lib, issue, process)
    c.instance_id = inst.id
    if agent_id:
        interaction.enter(session, issue, agent_id, inst, lib)
    after_change(session, lib, issue, inst, by_agent=by_agent)


def classify_and_route(session: Session, lib: Library, issue: Issue, text: str, *, comment_id: str | None = None,
                       agent_id: str | None = None) -> Classification:
    result = classify(text, classification_rules.table_for(session, issue.workspace_id))
    c = Classification(workspace_id=issue.workspace_id, issue_id=issue.id, comment_id=comment_id,
                       category=result.category, method=result.method,
                       rule=result.rule, reason=result.reason, decided_by="table" if result.decided else None,
                       question=None if result.decided else result.question,
                       candidates=None if result.decided else list(result.candidates))
    session.add(c)
    session.flush()
    _route(session, lib, issue, c, agent_id, result.workflow)
    return c


def judge(session: Session, lib: Library, issue: Issue, *, category: str, reason: str, by: str,
          agent_id: str | None, folio: str | None = None, by_agent: Agent | None = None,
          classification_id: str | None = None) -> Classification:
    """Decide a pending classification of the issue by judgement (reason mandatory): the one named by
    `classification_id`, else the latest. Content authoring's judgement also names the folio (paper or
    document), which selects its workflow. `by_agent`: the agent whose task token passes the judgement
    (dispatch.after_change)."""
    if category not in CATEGORIES:
        raise Invalid(f"category must be one of {', '.join(CATEGORIES)}")
    if not (reason or "").strip():
        raise Invalid("a classification by judgement needs a reason")
    folio = (folio or "").strip() or None
    if category == "content_authoring" and folio not in FOLIO_TYPES:
        raise Invalid("content authoring needs the folio it is for: folio paper (authoring-a-paper) or "
                      "document (authoring-a-document)")
    if category != "content_authoring" and folio is not None:
        raise Invalid("a folio is named only for content authoring")
    which = select(Classification).where(Classification.issue_id == issue.id, Classification.method == "pending")
    if classification_id:
        which = which.where(Classification.id == classification_id)
    c = session.scalar(which.order_by(Classification.created_at.desc()).limit(1))
    if c is None:
        raise NotFound(f"issue #{issue.number} has no classification waiting for a judgement"
                       + (f" with id {classification_id}" if classification_id else ""))
    c.category, c.method, c.reason, c.decided_by = category, "judgement", reason.strip(), by
    session.flush()
    _route(session, lib, issue, c, agent_id, workflow_of(category, folio), by_agent)
    return c


def pending_questions(session: Session, issue_id: str) -> list[dict[str, Any]]:
    """The issue's classifications waiting for a judgement, oldest first: what the next task's prompt
    asks (the sweep) and the issue page shows. A judgement names one by id (default: the latest)."""
    rows = session.scalars(select(Classification).where(Classification.issue_id == issue_id,
                                                        Classification.method == "pending")
                           .order_by(Classification.created_at))
    return [{"id": c.id, "question": c.question or "Which kind of request is this, and why?",
             "category": c.category, "candidates": list(c.candidates or []), "reason": c.reason, "rule": c.rule,
             "comment_id": c.comment_id} for c in rows]


def classify_text(session: Session, workspace_id: str, text: str) -> dict[str, Any]:
    """`/api/classify`: the workspace's table on any text, nothing recorded."""
    return classify(text, classification_rules.table_for(session, workspace_id)).as_dict()


def list_for(session: Session, issue: Issue) -> list[Classification]:
    return list(session.scalars(select(Classification).where(Classification.issue_id == issue.id)
                                .order_by(Classification.created_at)))


def _library() -> Library | None:
    try:
        return active_library()
    except DiagramError as e:  # a broken extra folder must not stop people filing issues
        log.error("workflow library does not load: %s", e)
        return None


def on_issue_created(session: Session, issue: Issue) -> None:
    lib = _library()
    if lib is None:
        return
    agent_id = issue.assignee_id if issue.assignee_type == "agent" else None
    classify_and_route(session, lib, issue, f"{issue.title}\n{issue.body}", agent_id=agent_id)


def on_comment(session: Session, issue: Issue, comment: Comment) -> None:
    """A person's comment addressed to an agent (`@name`) is a request: classify and route it."""
    if comment.author_type != "member":
        return
    names = set(_MENTION.findall(comment.body))
    if not names:
        return
    agent = session.scalar(select(Agent).where(Agent.workspace_id == issue.workspace_id, Agent.name.in_(names),
                                                Agent.archived_at.is_(None)).limit(1))
    if agent is None:
        return
    lib = _library()
    if lib is None:
        return
    classify_and_route(session, lib, issue, comment.body, comment_id=comment.id, agent_id=agent.id)


def register() -> None:
    """Put the classifier on the issue hooks (R-HAR-2): the app calls this once at start, so a new
    issue or an @-comment is classified and routed inside the request's transaction."""
    issue_hooks.when_issue_created(on_issue_created)
    issue_hooks.when_commented(on_comment)


def warm() -> None:
    """Build what the first new issue of a process would otherwise build while it is being filed:
    the shipped rules table and the workflow library (~0.1 s of CPU, several times that on a loaded
    machine). The autopilot scheduler calls it as it starts, so a firing due soon after a restart
    is not late by it."""
    from ..workflows.classify import shipped_table

    shipped_table()
    _library()

