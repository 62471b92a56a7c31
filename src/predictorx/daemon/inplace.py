"""What an in-place run's agent committed, as a branch (issue 22 §6).

In place (R-LD-7) the agent works on the person's checked-out branch and nothing is switched,
stashed or committed for it. When the agent made commits of its own (the checked-out branch moved
forward from where it was when the run started), the daemon names them with the task's branch
`agent/<agent>/<task>` at the commit the agent left — a ref only, no checkout — so the task page
shows the work, the server can push it to a forge, and the person can discard it by name.
Uncommitted changes stay what they are: the person's working tree, untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import review
from .branches import NoFreeBranch, create_free_branch, task_branch
from .gitcmd import GitError, git, git_text

TIMEOUT = 60.0


@dataclass(frozen=True)
class Start:
    top: Path
    head: str


def start(folder: Path | None) -> Start | None:
    """Where the folder's repository is when the run starts (None: not a repository with a commit)."""
    if folder is None:
        return None
    try:
        out = git_text(["rev-parse", "--show-toplevel", "HEAD^{commit}"], cwd=folder, timeout=TIMEOUT)
    except GitError:
        return None
    top, _, head = out.partition("\n")
    return Start(Path(top), head.strip())


def record(begun: Start, agent_name: str, task_id: str) -> str | None:
    """The task's branch at the agent's last commit, if it committed on top of where it started."""
    now = git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], cwd=begun.top, timeout=TIMEOUT, check=False)
    head = now.stdout.decode().strip()
    if now.returncode != 0 or head == begun.head:
        return None
    if git(["merge-base", "--is-ancestor", begun.head, head], cwd=begun.top, timeout=TIMEOUT,
           check=False).returncode != 0:
        return None  # the branch was switched or rewritten: not the agent's commits on top of it

    def create(name: str) -> None:
        git(["update-ref", "-m", "predictorx: in-place task's commits", f"refs/heads/{name}", head, ""],
            cwd=begun.top, timeout=TIMEOUT)

    try:
        return create_free_branch(task_branch(agent_name, task_id), create, GitError)
    except NoFreeBranch:
        return None


def origin_url(repo: Path) -> str | None:
    """The repository's `origin` remote URL (how the server maps a local folder to a forge)."""
    out = git(["config", "--get", "remote.origin.url"], cwd=repo, timeout=TIMEOUT, check=False).stdout
    return without_credentials(out.decode("utf-8", "surrogateescape").strip()) or None


def without_credentials(url: str) -> str:
    """A URL as the server may see it: never a `user:token@` part."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1", url)


def reviewed(begun: Start, agent_name: str, task_id: str) -> tuple[str | None, dict[str, Any] | None]:
    """(the task's branch, its review for the task page) — (None, None) when the agent committed
    nothing of its own in place."""
    branch = record(begun, agent_name, task_id)
    if branch is None:
        return None, None
    said = (f"The agent's commits in your folder are named by branch {branch} (your branch was neither "
            "switched nor committed to by Predictor X).")
    out = review.branch_review(begun.top, begun.head, branch, mode="in_place", repo_label=str(begun.top), note=said)
    out["head"] = begun.head
    out["origin_url"] = origin_url(begun.top)
    return branch, out
