"""The prompt a task's agent is started with: the issue (unless a resumed session holds it), the
follow-up request a comment made, the agent's own instructions (R-EX-10)."""

from __future__ import annotations

from ..protocol import AgentSpec, IssueRef


def build_prompt(issue: IssueRef, agent: AgentSpec, request: str | None = None, resumed: bool = False) -> str:
    """The issue (unless a resumed session already holds it), the follow-up request if any (R-EX-10)."""
    if resumed and request:
        return (f"A new request on issue #{issue.number} ({issue.title}), from a comment:\n\n{request}\n\n"
                f"When you are done, say briefly what you changed.")
    parts = [f"You are {agent.name}, an agent on Predictor X, working on issue #{issue.number}: "
             f"{issue.title}"]
    if issue.body:
        parts.append(issue.body)
    if request:
        parts.append(f"A follow-up request on this issue, from a comment:\n\n{request}")
    if agent.instructions:
        parts.append(agent.instructions)
    parts.append(f"Work in the current directory. When you are done, say briefly what you changed. "
                 f"To tell the people on the issue something, run "
                 f"`predictorx issue comment {issue.number} \"…\"`.")
    return "\n\n".join(parts)
