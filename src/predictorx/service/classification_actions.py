"""Answering a pending classification (issue 24 §6): the one use case the API
(`POST /api/issues/{ref}/classifications`, the agent's MCP `classification_judge`, the CLI) and the
issue page's form call. The judgement's author is the caller: an agent's task, or a person."""

from __future__ import annotations

from typing import Any

from . import auth
from . import classification as svc
from .transactions import Transactions
from .workflow_actions import acting_agent, agent_id_for, issue_for, library


def judge_as(tx: Transactions, principal: auth.Principal, workspace_id: str, ref: str, *, category: str,
             reason: str, folio: str | None = None, agent: str | None = None,
             classification: str | None = None) -> dict[str, Any]:
    """Record the judgement (reason mandatory) and start the workflow its category selects. A task
    token judges for its own agent; a person names the agent whose session enters the workflow
    (`agent`), or the issue's assigned agent does."""
    lib = library()
    with tx.write() as s:
        issue = issue_for(s, principal, workspace_id, ref)
        by_agent = acting_agent(s, principal)
        if principal.kind == "task":
            by, agent_id = f"agent task {principal.task_id}", by_agent.id if by_agent else None
        else:
            by = f"user {principal.user_id}"
            agent_id = agent_id_for(s, principal, workspace_id, issue, agent) \
                if (agent or issue.assignee_type == "agent") else None
        c = svc.judge(s, lib, issue, category=category, reason=reason, by=by, agent_id=agent_id, folio=folio,
                      by_agent=by_agent, classification_id=classification)
        return svc.as_dict(c)
