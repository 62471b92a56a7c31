"""Branch names for agents' work: `agent/<agent>/<task>` (R-WT-3), always a valid git ref.

One place for both deliveries — worktrees of a person's folder and checkouts from the repo
cache — so a task's branch reads the same wherever it was made: one naming (`task_branch`), one
ref sanitiser (`ref_component`, `sanitize_branch`) and one collision rule (`create_free_branch`:
`-2`, `-3`, … and, when a branch named like a parent folder (`agent`) is in the way, the flat name
`agent-<agent>-<task>` and its `-N`s).
"""

from __future__ import annotations

import re
from typing import Callable, Iterator

MAX_SUFFIX = 99  # name-2 … name-99, then the flat name and its suffixes


_UNSAFE = re.compile(r"[^\w.-]+")  # spaces, / ~ ^ : ? * [ \ @ { and control characters
_UNSAFE_ASCII = re.compile(r"[^A-Za-z0-9._-]+")


def ref_component(text: str, fallback: str, *, ascii_only: bool = False) -> str:
    """One path component of a ref (git check-ref-format); letters of any script are kept, or
    with `ascii_only` only ASCII ones (a name also safe in a shell or URL: the repo cache's
    directory names)."""
    s = (_UNSAFE_ASCII if ascii_only else _UNSAFE).sub("-", text)
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


def candidates(name: str) -> Iterator[str]:
    """The names the collision rule tries, in order, for a wanted (already valid) branch name."""
    flat = name.replace("/", "-")
    for base in (name, flat) if flat != name else (name,):
        yield base
        yield from (f"{base}-{n}" for n in range(2, MAX_SUFFIX + 1))


class NoFreeBranch(RuntimeError):
    """Every name the collision rule allows was taken (or could not be made)."""


def create_free_branch(wanted: str, create: Callable[[str], None],
                       errors: type[Exception] | tuple[type[Exception], ...]) -> str:
    """Create the branch `wanted` (sanitised) or the first free name after it; return the name.

    `create(name)` makes `refs/heads/<name>` atomically — it must fail (raising one of `errors`)
    when the name exists or cannot exist, e.g. `git update-ref refs/heads/<name> <commit> ""`."""
    last: Exception | None = None
    for name in candidates(sanitize_branch(wanted)):
        try:
            create(name)
            return name
        except errors as e:
            last = e
    raise NoFreeBranch(f"no free branch name like {wanted}: {last}")
