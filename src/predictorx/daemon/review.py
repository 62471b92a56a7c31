"""The agent's work, for review on the task page (issue 13 §1): the task's branch against its
baseline — files changed, lines added and removed, the unified diff (capped) — and where the
branch lives, sent to the server with the task's finish so the page needs no daemon to show it.

For a repository checkout the agent's commits and uncommitted changes are first brought onto its
branch in the daemon's cache (`delivery`, as worktree mode does, R-WT-4), so the work is on the
branch and not only in a directory; a branch that holds nothing is deleted (R-WT-5). Every diff
here runs in a repository the daemon owns (the cache, the person's repository) or, for an in-place
folder a run could write, in its sealed view (`gitview`, `env`): never reading a config a run
wrote, and without external diff or textconv drivers.
"""

from __future__ import annotations

import logging
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from .gitcmd import GitError, git

log = logging.getLogger("predictorx.daemon")
TIMEOUT = 60.0
Env = Mapping[str, str] | None
#: The diff shown on the page stops at this size, at a file boundary; the file list is complete.
PATCH_MAX_BYTES = 400_000
MAX_FILES = 2000
#: The most commits a review lists (the run's own, newest first): the server's commit boundary
#: (service/workflow_boundary.py) accepts a step's `produced` commit only from this list.
MAX_COMMITS = 500


def delete_branch_if_unchanged(repo: Path, branch: str, base: str) -> bool:
    """Delete `branch` when it still points at `base` (the task changed nothing). True if deleted."""
    return git(["update-ref", "-d", f"refs/heads/{branch}", base], cwd=repo, timeout=TIMEOUT,
               check=False).returncode == 0


def _numstat(repo: Path, base: str, branch: str, env: Env = None) -> list[dict[str, Any]]:
    out = git(["diff", "--numstat", "-z", "-M", "--no-ext-diff", "--no-textconv", base, f"refs/heads/{branch}", "--"],
              cwd=repo, env=env, timeout=TIMEOUT).stdout.decode("utf-8", "replace")
    fields = out.split("\0")
    files: list[dict[str, Any]] = []
    i = 0
    while i < len(fields) and len(files) < MAX_FILES:
        head = fields[i]
        if not head:
            i += 1
            continue
        parts = head.split("\t")
        if len(parts) < 3:
            break
        added, removed, path = parts[0], parts[1], parts[2]
        old = None
        if path == "":  # a rename: old and new path follow as their own fields
            old, path = fields[i + 1], fields[i + 2]
            i += 3
        else:
            i += 1
        binary = added == "-"
        files.append({"path": path, "old_path": old, "binary": binary,
                      "added": 0 if binary else int(added), "removed": 0 if binary else int(removed)})
    return files


def _patch(repo: Path, base: str, branch: str, env: Env = None) -> tuple[str, bool]:
    raw = git(["-c", "core.quotepath=false", "diff", "-M", "--no-color", "--no-ext-diff", "--no-textconv", base, f"refs/heads/{branch}", "--"],
              cwd=repo, env=env, timeout=TIMEOUT).stdout
    if len(raw) <= PATCH_MAX_BYTES:
        return raw.decode("utf-8", "replace"), False
    cut = raw.rfind(b"\ndiff --git ", 0, PATCH_MAX_BYTES)
    return raw[: cut + 1 if cut > 0 else PATCH_MAX_BYTES].decode("utf-8", "replace"), True


def _commits(repo: Path, base: str, tip: str, env: Env = None) -> list[str]:
    """The commits the run delivered: on the branch at `tip`, not reachable from the run's start
    `base` (the head before the run), newest first, at most MAX_COMMITS. Read in the daemon's own
    repository, after delivery: what the server keeps with the task as the run's own commits."""
    out = git(["rev-list", f"--max-count={MAX_COMMITS}", tip, f"^{base}", "--"], cwd=repo, env=env,
              timeout=TIMEOUT, check=False)
    return [ln for ln in out.stdout.decode().split() if len(ln) == 40] if out.returncode == 0 else []


def branch_review(repo: Path, base: str, branch: str | None, *, mode: str, repo_label: str,
                  worktree_path: str | None = None, note: str | None = None, env: Env = None) -> dict[str, Any]:
    """What the task page shows. `mode`: worktree (a person's repository) or checkout (the
    daemon's repo cache). A branch of None means the task changed nothing. `env`: a sealed view's
    (`gitview`), for a repository a run could write (in place): its config is then never read."""
    review: dict[str, Any] = {"mode": mode, "repo_path": str(repo), "repo_label": repo_label, "base": base,
                              "branch": branch, "worktree_path": worktree_path, "note": note,
                              "changed": False, "files": [], "added": 0, "removed": 0, "patch": "",
                              "truncated": False, "commits": []}
    if not branch:
        return review
    try:
        files = _numstat(repo, base, branch, env)
        patch, truncated = _patch(repo, base, branch, env)
    except GitError as e:
        log.warning("could not diff %s against %s in %s: %s", branch, base[:12], repo, e)
        review["error"] = f"the diff could not be made ({e})"
        return review
    tip = git(["rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}"], cwd=repo, env=env,
              timeout=TIMEOUT, check=False).stdout.decode().strip()
    review["tip"] = tip or None  # where the branch was when reported: a discard deletes only that
    review["commits"] = _commits(repo, base, tip, env) if tip else []
    review.update(changed=bool(files), files=files, patch=patch, truncated=truncated,
                  added=sum(f["added"] for f in files), removed=sum(f["removed"] for f in files))
    return review
