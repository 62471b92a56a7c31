"""Branch names for agents' work: `agent/<agent>/<task>` (R-WT-3), always a valid git ref.

One place for both deliveries — worktrees of a person's folder and checkouts from the repo
cache — so a task's branch reads the same wherever it was made.
"""

from __future__ import annotations

import re


def ref_component(text: str, fallback: str) -> str:
    """One path component of a ref (git check-ref-format); letters of any script are kept."""
    s = re.sub(r"[^\w.-]+", "-", text)  # spaces, / ~ ^ : ? * [ \ @ { and control characters
    s = re.sub(r"\.{2,}", ".", s)
    s = re.sub(r"-{2,}", "-", s)
    s = s[:64].strip(".-")
    while s.lower().endswith(".lock"):
        s = s[:-5].rstrip(".-")
    return s or fallback


def task_branch(agent_name: str, task_id: str) -> str:
    return f"agent/{ref_component(agent_name, 'agent')}/{ref_component(task_id, 'task')}"


def sanitize_branch(name: str) -> str:
    """Any text as a valid branch name (git check-ref-format --branch), keeping its slashes."""
    parts = [ref_component(p, "x") for p in name.split("/") if p.strip()]
    branch = "/".join(parts) or "x"
    return "HEAD-branch" if branch == "HEAD" else branch  # git reserves the bare name HEAD
