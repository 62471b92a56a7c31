"""What an in-place run's agent committed, as a branch (issue 22 §6).

In place (R-LD-7) the agent works on the person's checked-out branch and nothing is switched,
stashed or committed for it. When the agent made commits of its own (the checked-out branch moved
forward from where it was when the run started), the daemon names them with the task's branch
`agent/<agent>/<task>` at the commit the agent left — a ref only, no checkout — so the task page
shows the work, the server can push it to a forge, and the person can discard it by name.
Uncommitted changes stay what they are: the person's working tree, untouched.

The folder's `.git` is the agent's to write (its config, hooks, `objects/info/alternates`), so the
daemon's git never runs there as in a repository: its questions (where HEAD is, is it on top of the
start, the review's diff) are asked of a sealed view (`gitview`: the daemon's config, the folder's
refs and objects as data — a promisor remote's lazy fetch, a filter or an fsmonitor the agent
configured run nothing), the task's branch is written as a ref file into the validated git dir
(`gitdata.create_ref`), and `remote.origin.url` is read off the config file as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import gitview, review
from .branches import NoFreeBranch, create_free_branch, task_branch
from .gitcmd import GitError, git
from .gitdata import RefNotWritten, SHA, config_values, create_ref, nearest_dot_git, read_small, repository_dirs

TIMEOUT = 60.0


@dataclass(frozen=True)
class Start:
    top: Path
    head: str


def _ask(top: Path, args: list[str]) -> str | None:
    """stdout of a read-only git question about the repository at `top`, asked of its sealed view;
    None when there is no view or git says no."""
    with gitview.sealed_view(top) as env:
        if env is None:
            return None
        out = git(args, cwd=top, env=env, timeout=TIMEOUT, check=False)
        return out.stdout.decode("utf-8", "surrogateescape").strip() if out.returncode == 0 else None


def _head(top: Path) -> str | None:
    head = _ask(top, ["rev-parse", "--verify", "-q", "HEAD^{commit}"])
    return head if head and SHA.match(head) else None


def start(folder: Path | None) -> Start | None:
    """Where the folder's repository is when the run starts (None: not a repository with a commit)."""
    if folder is None:
        return None
    dot_git = nearest_dot_git(folder)
    if dot_git is None:
        return None
    head = _head(dot_git.parent)
    return Start(dot_git.parent, head) if head else None


def record(begun: Start, agent_name: str, task_id: str) -> str | None:
    """The task's branch at the agent's last commit, if it committed on top of where it started."""
    head = _head(begun.top)
    if head is None or head == begun.head:
        return None
    if _ask(begun.top, ["merge-base", "--is-ancestor", begun.head, head]) is None:
        return None  # the branch was switched or rewritten: not the agent's commits on top of it
    dirs = repository_dirs(begun.top / ".git")
    if dirs is None:
        return None

    def create(name: str) -> None:
        create_ref(dirs[1], f"refs/heads/{name}", head)

    try:
        return create_free_branch(task_branch(agent_name, task_id), create, (RefNotWritten, OSError))
    except NoFreeBranch:
        return None


def origin_url(repo: Path) -> str | None:
    """The repository's `origin` remote URL (how the server maps a local folder to a forge), read
    off its config file as text (`include.path` is not followed)."""
    dot_git = nearest_dot_git(repo)
    dirs = repository_dirs(dot_git) if dot_git is not None else None
    if dirs is None:
        return None
    values = config_values(read_small(dirs[1], "config", limit=4 * 2**20) or "", "remote", "origin", "url")
    return without_credentials(values[-1].strip()) or None if values else None


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
    with gitview.sealed_view(begun.top) as env:
        if env is None:
            raise GitError(["diff"], 1, f"{begun.top} is no longer a repository the daemon can read")
        out = review.branch_review(begun.top, begun.head, branch, mode="in_place", repo_label=str(begun.top),
                                   note=said, env=env)
    out["head"] = begun.head
    out["origin_url"] = origin_url(begun.top)
    return branch, out
