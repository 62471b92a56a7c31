"""A run's own repository: where an agent works and commits, with a git dir of its own.

A task's checkout — of the daemon's repo cache (`checkout` placement, `predictorx repo checkout`)
or of a person's repository (`worktree` mode) — is a new repository at the checkout's path whose
`.git` is a directory of its own. It borrows the source's objects through `objects/info/alternates`
(the source is mounted read-only in the sandbox, or not at all), holds the source's remote-tracking
branches and tags, and the task's branch checked out. Whatever the agent then writes into that git
dir — config, hooks, alternates, refs — stays there: the daemon reads it back only as data
(`delivery`), never as the configuration of a git command it runs, and the source is never written
by the run (docs/security-sandbox.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from .gitcmd import DEFAULT_TIMEOUT, GitError, git, sealed_env
from .gitdata import repository_dirs

_SHA = re.compile(r"^[0-9a-f]{40}$")
#: Refs of the source the run's repository gets, under the same names: the remote's branches and tags.
SHARED_REFS = ("refs/remotes/origin/", "refs/tags/")


def create(source: Path, dest: Path, *, branch: str, commit: str, remote_url: str | None = None,
           refs: tuple[str, ...] = SHARED_REFS, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Make `dest` (missing or empty) a repository of its own on a new branch `branch` at `commit`,
    borrowing `source`'s objects (`source` is a git dir: a bare cache or a person's `.git`).

    `remote_url` becomes its `origin` (so the agent can fetch and push there itself). Raises GitError.
    """
    init(dest, source, remote_url=remote_url, refs=refs, skip=f"refs/heads/{branch}", timeout=timeout)
    start_branch(dest, branch, commit, timeout=timeout)


def add_remote(dest: Path, name: str, url: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
    """A remote in the run's repository's own config (written by the daemon, before the run)."""
    own = sealed_env(dest / ".git")
    git(["config", f"remote.{name}.url", url], cwd=dest, env=own, timeout=timeout)
    git(["config", f"remote.{name}.fetch", f"+refs/heads/*:refs/remotes/{name}/*"], cwd=dest, env=own, timeout=timeout)


def init(dest: Path, source: Path | None, *, remote_url: str | None = None, refs: tuple[str, ...] = SHARED_REFS,
         skip: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> Path:
    """A new repository at `dest` with a config the caller writes; with `source`, its objects
    borrowed and its `refs` copied (all but `skip`). Returns the new git dir."""
    dest.mkdir(parents=True, exist_ok=True)
    # No templates (hooks) and none of the person's init settings: this config is ours.
    git(["init", "--quiet", "--template=", str(dest)], cwd=dest.parent, env=sealed_env(), timeout=timeout)
    git_dir = dest / ".git"
    own = sealed_env(git_dir)
    if remote_url:
        git(["config", "remote.origin.url", remote_url], cwd=dest, env=own, timeout=timeout)
        git(["config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"], cwd=dest, env=own,
            timeout=timeout)
    if source is None:
        return git_dir
    info = git_dir / "objects" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "alternates").write_text(str(Path(source).absolute() / "objects") + "\n")
    theirs = sealed_env(Path(source))
    listing = git(["for-each-ref", "--format=%(objectname) %(refname)", *refs], cwd=dest, env=theirs,
                  timeout=timeout).stdout.decode("utf-8", "replace")
    lines = [f"create {name} {sha}" for sha, _, name in (row.partition(" ") for row in listing.splitlines())
             if _SHA.match(sha) and name not in ("refs/remotes/origin/HEAD", skip)]
    if lines:
        git(["update-ref", "--stdin"], cwd=dest, env=own, input=("\n".join(lines) + "\n").encode(), timeout=timeout)
    origin_head = git(["symbolic-ref", "-q", "refs/remotes/origin/HEAD"], cwd=dest, env=theirs, timeout=timeout,
                      check=False).stdout.decode().strip()
    if origin_head.startswith("refs/remotes/origin/"):
        git(["symbolic-ref", "refs/remotes/origin/HEAD", origin_head], cwd=dest, env=own, timeout=timeout,
            check=False)
    return git_dir


def start_branch(dest: Path, branch: str, commit: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Create `branch` at `commit` in the repository at `dest`, check it out and fill the folder."""
    if not _SHA.match(commit):
        raise GitError(["checkout"], 1, f"{commit!r} is not a commit id")
    own = sealed_env(dest / ".git")
    git(["update-ref", f"refs/heads/{branch}", commit, ""], cwd=dest, env=own, timeout=timeout)
    git(["symbolic-ref", "HEAD", f"refs/heads/{branch}"], cwd=dest, env=own, timeout=timeout)
    # The files, by the person's own global settings (git-lfs, say): the repository is brand new.
    git(["reset", "--quiet", "--hard"], cwd=dest, timeout=timeout)


def is_own_repository(path: Path) -> bool:
    """`path` is the top of a repository whose `.git` is a real directory (not a link, nor a
    `gitdir:` file pointing into another repository) leading nowhere else (no `commondir`, its
    `objects` and `refs` no links: gitdata.repository_dirs)."""
    git_dir = Path(path) / ".git"
    return repository_dirs(git_dir) == (git_dir, git_dir)
