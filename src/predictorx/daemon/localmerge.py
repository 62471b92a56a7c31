"""Merging or discarding a task's branch in a person's own repository, when they ask from the
server (issue 22 §6, a local folder with no forge).

Merge brings the task's branch into the branch checked out in the person's working copy — a
fast-forward when their branch has not moved, else a merge commit whose message names the issue
and the task — only when that is safe: a branch (not a detached HEAD) is checked out, no merge,
rebase or cherry-pick is under way, nothing is staged, none of the files the task's branch changes
is modified or untracked in their working copy, and the two branches merge without a conflict
(checked first with `git merge-tree`, which writes nothing). Otherwise nothing is touched and the
answer is a sentence naming what is in the way. Discard deletes the task's branch (only while it
still points where the task left it) and the task's kept folder, if the daemon kept one.

In place (R-LD-7: the agent works on the person's checked-out branch; nothing is switched or
committed for it) the agent's own commits are already on that branch, recorded at the run's end
as the task's branch `agent/<agent>/<task>` at the commit it left: merge then says so (or merges
that branch like worktree mode if the person has switched branches meanwhile), and discard deletes
that branch only — it never rewrites the person's branch; the answer says how to drop the commits
(`git reset --keep <start>`) if they want to.

Every git command runs in the person's repository with hooks off (gitcmd) and a timeout.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .gitcmd import GitError, git, git_text

TIMEOUT = 120.0
_IN_PROGRESS = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply")


class Refused(RuntimeError):
    """Merging or discarding is not safe now; the message says why, naming files where it can."""


@dataclass(frozen=True)
class Outcome:
    sha: str       # the person's branch after a merge; the deleted branch's tip after a discard
    how: str       # fast-forward | merge-commit | already-merged | deleted
    into: str      # the branch merged into ("" for a discard)
    message: str   # a sentence for the task's page


def _ident_env(repo: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    for who in ("AUTHOR", "COMMITTER"):
        if git(["var", f"GIT_{who}_IDENT"], cwd=repo, timeout=TIMEOUT, check=False).returncode != 0:
            env[f"GIT_{who}_NAME"], env[f"GIT_{who}_EMAIL"] = "Predictor X", "predictorx@localhost"
    return env


def _rev(repo: Path, spec: str) -> str | None:
    out = git(["rev-parse", "--verify", "-q", f"{spec}^{{commit}}"], cwd=repo, timeout=TIMEOUT, check=False)
    return out.stdout.decode().strip() or None if out.returncode == 0 else None


def _top(repo: Path) -> Path:
    try:
        return Path(git_text(["rev-parse", "--show-toplevel"], cwd=repo, timeout=TIMEOUT))
    except GitError as e:
        raise Refused(f"{repo} is not a git working copy any more ({e})") from None


def _names(out: bytes) -> list[str]:
    return [p.decode("utf-8", "replace") for p in out.split(b"\0") if p]


def _shown(paths: list[str]) -> str:
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def _dirty(top: Path) -> tuple[list[str], list[str]]:
    """(staged paths, paths modified or untracked in the working tree)."""
    staged = _names(git(["diff", "--cached", "--name-only", "-z", "--no-ext-diff"], cwd=top, timeout=TIMEOUT).stdout)
    out = git(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"], cwd=top,
              timeout=TIMEOUT).stdout
    changed = [e[3:].decode("utf-8", "replace") for e in out.split(b"\0") if len(e) > 3]
    return staged, changed


def merge(repo: Path, branch: str, *, issue: str, task_id: str, start: str | None = None) -> Outcome:
    """Merge `branch` into the branch checked out at `repo` when safe; raise Refused otherwise."""
    top = _top(repo)
    tip = _rev(top, f"refs/heads/{branch}")
    if tip is None:
        raise Refused(f"the task's branch {branch} is no longer in {top}; nothing was merged")
    git_dir = Path(git_text(["rev-parse", "--path-format=absolute", "--git-dir"], cwd=top, timeout=TIMEOUT))
    busy = [n for n in _IN_PROGRESS if (git_dir / n).exists()]
    if busy:
        raise Refused(f"a merge, rebase or cherry-pick is under way in {top} ({busy[0]} exists); finish or "
                      "abort it, then merge again")
    head_ref = git(["symbolic-ref", "-q", "HEAD"], cwd=top, timeout=TIMEOUT, check=False).stdout.decode().strip()
    if not head_ref.startswith("refs/heads/"):
        raise Refused(f"{top} has no branch checked out (a detached HEAD); check out the branch to merge into, "
                      "then merge again")
    into = head_ref.removeprefix("refs/heads/")
    if into == branch:
        raise Refused(f"the task's branch {branch} is the one checked out in {top}; check out the branch to "
                      "merge it into, then merge again")
    head = _rev(top, "HEAD")
    if head is None:
        raise Refused(f"the branch {into} checked out in {top} has no commit yet; nothing was merged")
    if git(["merge-base", "--is-ancestor", tip, head], cwd=top, timeout=TIMEOUT, check=False).returncode == 0:
        return Outcome(head, "already-merged", into, f"The task's work ({branch}) is already on {into} in {top}.")
    base = git_text(["merge-base", head, tip], cwd=top, timeout=TIMEOUT)
    involved = set(_names(git(["diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", base, tip, "--"],
                              cwd=top, timeout=TIMEOUT).stdout))
    staged, changed = _dirty(top)
    if staged:
        raise Refused(f"{top} has staged changes ({_shown(staged)}); commit or unstage them, then merge again "
                      "— nothing was merged")
    in_the_way = sorted(p for p in changed if p in involved)
    if in_the_way:
        raise Refused(f"the working tree of {top} has uncommitted changes to files the task's branch changes "
                      f"({_shown(in_the_way)}); commit or stash them, then merge again — nothing was merged")
    fast_forward = base == head
    if not fast_forward:
        probe = git(["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", head, tip], cwd=top,
                    timeout=TIMEOUT, check=False)
        if probe.returncode == 1:
            conflicts = sorted(set(_names(probe.stdout)[1:]))
            raise Refused(f"the task's branch {branch} conflicts with {into} in {top} ({_shown(conflicts)}); "
                          "merge it yourself with git — nothing was merged")
        if probe.returncode != 0:
            raise Refused(f"git could not tell whether {branch} merges cleanly into {into}: "
                          f"{probe.stderr.decode('utf-8', 'replace').strip()[-300:]}")
    message = f"Merge {branch} (issue {issue}, task {task_id}) from Predictor X"
    args = ["merge", "--ff-only", tip] if fast_forward else ["merge", "--no-ff", "--no-edit", "-m", message, tip]
    try:
        git(["-c", "merge.autoStash=false", *args], cwd=top, env=_ident_env(top), timeout=TIMEOUT)
    except GitError as e:
        if (git_dir / "MERGE_HEAD").exists():  # should not happen after the probe: leave nothing half-done
            git(["merge", "--abort"], cwd=top, timeout=TIMEOUT, check=False)
        raise Refused(f"git merge of {branch} into {into} failed, nothing was merged: {e}") from None
    now = _rev(top, "HEAD") or ""
    how = "fast-forward" if fast_forward else "merge-commit"
    said = "fast-forwarded" if fast_forward else "merged with a merge commit"
    return Outcome(now, how, into, f"The task's branch {branch} was {said} into {into} in {top} ({now[:12]}).")


def discard(repo: Path, branch: str, *, expected: str | None = None, kept_folder: Path | None = None,
            kept_root: Path | None = None, start: str | None = None) -> Outcome:
    """Delete the task's branch (only while it still points at `expected`, when given) and the
    folder the daemon kept for the task, if it is inside `kept_root`."""
    top = _top(repo)
    tip = _rev(top, f"refs/heads/{branch}")
    if tip is None:
        raise Refused(f"the task's branch {branch} is no longer in {top}; nothing to discard")
    head_ref = git(["symbolic-ref", "-q", "HEAD"], cwd=top, timeout=TIMEOUT, check=False).stdout.decode().strip()
    if head_ref == f"refs/heads/{branch}":
        raise Refused(f"the task's branch {branch} is checked out in {top}; check out another branch, then "
                      "discard again")
    if expected and tip != expected:
        raise Refused(f"the task's branch {branch} in {top} has moved since the task ended (now {tip[:12]}); "
                      "it was kept — delete it yourself with `git branch -D` if you mean to")
    git(["update-ref", "-d", f"refs/heads/{branch}", tip], cwd=top, timeout=TIMEOUT)
    message = f"The task's branch {branch} ({tip[:12]}) was deleted from {top}."
    if kept_folder is not None and kept_root is not None and _inside(kept_folder, kept_root) and kept_folder.is_dir():
        shutil.rmtree(kept_folder, ignore_errors=True)
        message += f" Its kept folder {kept_folder} was removed."
    head = _rev(top, "HEAD")
    if start and head and git(["merge-base", "--is-ancestor", tip, head], cwd=top, timeout=TIMEOUT,
                              check=False).returncode == 0:
        message += (f" Its commits are still on the branch checked out there (the agent worked in place); "
                    f"Predictor X never rewrites your branch — `git reset --keep {start[:12]}` drops them.")
    return Outcome(tip, "deleted", "", message)


def _inside(path: Path, root: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real != top and real.startswith(top + os.sep)
