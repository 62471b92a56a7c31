"""A comment that mentions an agent (`@claude-1 please also …`) is a request to it (R-EX-10).

Each mentioned agent gets one follow-up task on the issue with the comment as its prompt; an
agent's own comment never queues work for itself. Where the agent already has work on the issue,
the request joins it: a queued task takes it into its prompt, a started one keeps it for the
follow-up queued when it ends.
"""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Comment, Issue, Task
from . import tasks

_MENTION = re.compile(r"(?<![\w.@])@([A-Za-z0-9][A-Za-z0-9_.-]{0,99})")


def mentioned_agents(session: Session, workspace_id: str, text: str) -> list[Agent]:
    """The workspace's agents `text` mentions, each once, in the order they are first mentioned.
    Punctuation after a name (`@claude-1,` / `@claude-1.`) is not part of it."""
    order: list[str] = []
    for raw in _MENTION.findall(text):
        for name in (raw, raw.rstrip(".-_")):
            if name and name not in order:
                order.append(name)
    if not order:
        return []
    found = {a.name: a for a in session.scalars(select(Agent).where(Agent.workspace_id == workspace_id,
                                                                   Agent.name.in_(order)))}
    seen: set[str] = set()
    out = []
    for name in order:
        agent = found.get(name)
        if agent is not None and agent.id not in seen:
            seen.add(agent.id)
            out.append(agent)
    return out


def queue_followups(session: Session, issue: Issue, comment: Comment) -> list[Task]:
    """One follow-up per agent the comment mentions, never for the comment's own author."""
    queued = []
    for agent in mentioned_agents(session, issue.workspace_id, comment.body):
        if comment.author_type == "agent" and comment.author_id == agent.id:
            continue
        queued.append(tasks.follow_up(session, issue, agent, comment.body))
    return queued
