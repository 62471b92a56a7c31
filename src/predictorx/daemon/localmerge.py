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
as the task's branch `agent/<agent>/<task>` at the commit it left: merge then says so (or refuses
with a sentence if the person has switched branches meanwhile: see below), and discard deletes
that branch only — it never rewrites the person's branch; the answer says how to drop the commits
(`git reset --keep <start>`) if they want to.

Every git command runs in the person's repository with hooks off (gitcmd) and a timeout — except
for an in-place task's folder (`in_place`), whose `.git` an agent could write (its config could name
a filter, a merge driver or a promisor remote whose lazy fetch runs a program): there the daemon's
git never reads it as a repository. Its questions are asked of the sealed view (`gitview`), a
discard deletes the branch's ref as data (`gitdata.delete_ref`), and a merge that is not already on
the person's branch is refused with a sentence — the person merges it with their own git.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import gitview
from .gitcmd import GitError, git, git_text
from .gitdata import RefNotWritten, delete_ref, nearest_dot_git, read_small, repository_dirs

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


def _rev(repo: Path, spec: str, env: dict[str, str] | None = None) -> str | None:
    out = git(["rev-parse", "--verify", "-q", f"{spec}^{{commit}}"], cwd=repo, env=env, timeout=TIMEOUT,
              check=False)
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


def _sealed_top(repo: Path) -> tuple[Path, Path, Path]:
    """(top, git dir, common dir) of an in-place folder's repository, found as data (gitdata)."""
    dot_git = nearest_dot_git(repo)
    dirs = repository_dirs(dot_git) if dot_git is not None else None
    if dot_git is None or dirs is None:
        raise Refused(f"{repo} is not a git working copy the daemon can read (no plain `.git` there); "
                      "nothing was changed")
    return dot_git.parent, dirs[0], dirs[1]


def _ancestor(top: Path, old: str, new: str, env: dict[str, str] | None = None) -> bool:
    return git(["merge-base", "--is-ancestor", old, new], cwd=top, env=env, timeout=TIMEOUT,
               check=False).returncode == 0


def _merge_into(head_ref: str, top: Path, branch: str) -> str:
    """The branch checked out at `top` (HEAD's ref), to merge `branch` into; Refused when there is
    none (a detached HEAD) or it is `branch` itself."""
    if not head_ref.startswith("refs/heads/"):
        raise Refused(f"{top} has no branch checked out (a detached HEAD); check out the branch to merge into, "
                      "then merge again")
    into = head_ref.removeprefix("refs/heads/")
    if into == branch:
        raise Refused(f"the task's branch {branch} is the one checked out in {top}; check out the branch to "
                      "merge it into, then merge again")
    return into


def _in_place_merge(repo: Path, branch: str) -> Outcome:
    """An in-place task's branch: already on the person's branch (the usual case: the agent
    committed there), or refused — no git merge runs in a folder an agent could change."""
    top, git_dir, _common = _sealed_top(repo)
    into = _merge_into((read_small(git_dir, "HEAD") or "").strip().removeprefix("ref: "), top, branch)
    with gitview.sealed_view(top) as env:
        if env is None:
            raise Refused(f"{top} is not a git working copy the daemon can read; nothing was merged")
        tip = _rev(top, f"refs/heads/{branch}", env)
        if tip is None:
            raise Refused(f"the task's branch {branch} is no longer in {top}; nothing was merged")
        head = _rev(top, "HEAD", env)
        if head is not None and _ancestor(top, tip, head, env):
            return Outcome(head, "already-merged", into, f"The task's work ({branch}) is already on {into} in {top}.")
    raise Refused(f"the task worked in place in {top}, whose .git its agent could change (a config there could "
                  f"run a program), so Predictor X runs no git merge there; {branch} is not on {into}: check "
                  f".git/config, then merge it yourself with `git merge {branch}` — nothing was merged")


def merge(repo: Path, branch: str, *, issue: str, task_id: str, start: str | None = None,
          in_place: bool = False) -> Outcome:
    """Merge `branch` into the branch checked out at `repo` when safe; raise Refused otherwise.
    `in_place`: the task ran in this folder (its `.git` is not the daemon's to read as a repository)."""
    if in_place:
        return _in_place_merge(repo, branch)
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
    into = _merge_into(head_ref, top, branch)
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
            kept_root: Path | None = None, start: str | None = None, in_place: bool = False) -> Outcome:
    """Delete the task's branch (only while it still points at `expected`, when given) and the
    folder the daemon kept for the task, if it is inside `kept_root`. `in_place`: the task ran in
    this folder — its questions go to the sealed view and the ref is deleted as data."""
    if not in_place:
        return _discard(_top(repo), branch, expected, kept_folder, kept_root, start)
    top, git_dir, common = _sealed_top(repo)
    with gitview.sealed_view(top) as env:
        if env is None:
            raise Refused(f"{top} is not a git working copy the daemon can read; nothing was discarded")
        return _discard(top, branch, expected, kept_folder, kept_root, start, env=env, dirs=(git_dir, common))


def _discard(top: Path, branch: str, expected: str | None, kept_folder: Path | None, kept_root: Path | None,
             start: str | None, *, env: dict[str, str] | None = None, dirs: tuple[Path, Path] | None = None) -> Outcome:
    tip = _rev(top, f"refs/heads/{branch}", env)
    if tip is None:
        raise Refused(f"the task's branch {branch} is no longer in {top}; nothing to discard")
    if dirs is not None:
        head_ref = (read_small(dirs[0], "HEAD") or "").strip().removeprefix("ref: ")
    else:
        head_ref = git(["symbolic-ref", "-q", "HEAD"], cwd=top, timeout=TIMEOUT, check=False).stdout.decode().strip()
    if head_ref == f"refs/heads/{branch}":
        raise Refused(f"the task's branch {branch} is checked out in {top}; check out another branch, then "
                      "discard again")
    if expected and tip != expected:
        raise Refused(f"the task's branch {branch} in {top} has moved since the task ended (now {tip[:12]}); "
                      "it was kept — delete it yourself with `git branch -D` if you mean to")
    if dirs is None:
        git(["update-ref", "-d", f"refs/heads/{branch}", tip], cwd=top, timeout=TIMEOUT)
    else:
        try:
            delete_ref(dirs[1], f"refs/heads/{branch}", tip)
        except (RefNotWritten, OSError) as e:
            raise Refused(f"the task's branch {branch} could not be deleted from {top} ({e}); nothing was "
                          "discarded") from None
    message = f"The task's branch {branch} ({tip[:12]}) was deleted from {top}."
    if kept_folder is not None and kept_root is not None and _inside(kept_folder, kept_root) and kept_folder.is_dir():
        shutil.rmtree(kept_folder, ignore_errors=True)
        message += f" Its kept folder {kept_folder} was removed."
    head = _rev(top, "HEAD", env)
    if start and head and _ancestor(top, tip, head, env):
        message += (f" Its commits are still on the branch checked out there (the agent worked in place); "
                    f"Predictor X never rewrites your branch — `git reset --keep {start[:12]}` drops them.")
    return Outcome(tip, "deleted", "", message)


def _inside(path: Path, root: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real != top and real.startswith(top + os.sep)
