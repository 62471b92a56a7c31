"""A comment that mentions an agent (`@claude-1 please also …`) is a request to it (R-EX-10).

Each mentioned agent gets one follow-up task on the issue with the comment as its prompt; an
agent's own comment never queues work for itself. Where the agent already has work on the issue,
the request joins it: a queued task takes it into its prompt, a started one keeps it for the
follow-up queued when it ends.

An agent's comment is written with a task token, which may not assign work (SECURITY-MODEL), and
its text may come from a prompt injection. So an agent's mention asks only agents of the same
owner — never makes another person's agent run on that person's machine with a prompt it chose
(R-SEC-6) — and agents mentioning each other stop after AGENT_CHAIN_LIMIT agent comments in a row
on the issue: a person's comment starts a new chain (no loop runs unattended).
"""

from __future__ import annotations

import re

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.schema import Agent, Comment, Issue, Task
from . import tasks

#: Agent comments in a row (no person's comment between them) whose mentions still queue work.
AGENT_CHAIN_LIMIT = 5

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
                                                                   Agent.name.in_(order),
                                                                   Agent.archived_at.is_(None)))}
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
    agents = mentioned_agents(session, issue.workspace_id, comment.body)
    if comment.author_type == "agent" and agents:
        author = session.get(Agent, comment.author_id)
        agents = [a for a in agents if may_ask(author, a) and a.id != author.id]
        if agents and _agent_chain(session, issue) > AGENT_CHAIN_LIMIT:
            return []
    return [tasks.follow_up(session, issue, agent, comment.body) for agent in agents]


def may_ask(author: Agent | None, agent: Agent) -> bool:
    """Whether what an agent does with its task token (possibly prompt-injected) may give `agent`
    work: only an agent of the same owner (R-SEC-6). Its mentions here, and the workflow steps the
    harness dispatches after a change it made (service/workflow_dispatch.py)."""
    return author is not None and agent.owner_id is not None and agent.owner_id == author.owner_id


def _agent_chain(session: Session, issue: Issue) -> int:
    """Agent comments on the issue since its latest person's comment (this one included)."""
    last_person = session.scalar(select(func.max(Comment.created_at)).where(
        Comment.issue_id == issue.id, Comment.author_type == "member"))
    q = select(func.count()).select_from(Comment).where(Comment.issue_id == issue.id, Comment.author_type == "agent")
    if last_person is not None:
        q = q.where(Comment.created_at > last_person)
    return session.scalar(q) or 0
