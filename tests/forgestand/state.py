"""What a stand-in forge holds: repositories (real bare git repositories), pull requests, reviews,
comments, checks, branch protection. Forge-neutral; each forge module renders it in its own shapes.

Git work is real git on the bare repository: a merge is `git merge-tree --write-tree` + `commit-tree`
(a merge commit, or one parent for a squash); a rebase replays the head's commits in a scratch
worktree and pushes the result into the bare repository.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile
import threading
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "Forge Stand-in", "GIT_AUTHOR_EMAIL": "forge@standin.invalid",
           "GIT_COMMITTER_NAME": "Forge Stand-in", "GIT_COMMITTER_EMAIL": "forge@standin.invalid",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}


def git(cwd: Path, *args: str, input: str | None = None, check: bool = True) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=60)
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


def now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


_ids = itertools.count(1001)


def new_id() -> int:
    return next(_ids)


def user_id_of(login: str) -> int:
    """A stable numeric id for an account name (the same in every run)."""
    return zlib.crc32(login.encode()) % 100000 + 1


@dataclass
class Comment:
    id: int
    author: str
    body: str
    path: str | None = None
    line: int | None = None
    review_id: int | None = None
    commit_id: str = ""
    created_at: str = field(default_factory=now)


@dataclass
class Review:
    id: int
    author: str
    state: str  # approved | changes_requested | commented
    body: str
    commit_id: str
    comments: list[Comment] = field(default_factory=list)
    submitted_at: str = field(default_factory=now)


@dataclass
class CheckRun:
    id: int
    name: str
    state: str  # pending | success | failure
    sha: str
    log: str = ""
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)


@dataclass
class PR:
    number: int
    id: int
    title: str
    body: str
    head: str
    base: str
    draft: bool
    author: str
    head_sha: str
    base_sha: str
    state: str = "open"  # open | closed | merged
    merged_sha: str | None = None
    merge_method: str | None = None
    merged_by: str | None = None
    merged_at: str | None = None
    closed_at: str | None = None
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)
    reviews: list[Review] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)

    def review(self, review_id: int | None = None) -> Review:
        """A review by id, the latest when None (webhook builders)."""
        return self.reviews[-1] if review_id is None else next(r for r in self.reviews if r.id == review_id)

    def inline_comment(self, comment_id: int | None = None) -> tuple[Review, Comment]:
        """An inline review comment (with its review) by id, the latest when None."""
        pairs = [(r, c) for r in self.reviews for c in r.comments]
        return pairs[-1] if comment_id is None else next(p for p in pairs if p[1].id == comment_id)

    def comment(self, comment_id: int | None = None) -> Comment:
        """A conversation comment by id, the latest when None."""
        return self.comments[-1] if comment_id is None else next(c for c in self.comments if c.id == comment_id)


class MergeRefused(Exception):
    """Why the forge says no; `reason` is one of protected | conflict | not_open | method."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail


@dataclass
class Repo:
    id: int
    path: str
    bare: Path
    default_branch: str
    merge_methods: tuple[str, ...]
    clone_url: str
    web_url: str
    prs: list[PR] = field(default_factory=list)
    checks: list[CheckRun] = field(default_factory=list)
    protected: dict[str, list[str]] = field(default_factory=dict)
    created_at: str = field(default_factory=now)
    draft_prs: bool = True
    #: Who may do what (login → admin | maintain | write | triage | read, GitHub's role names; each
    #: flavour maps them to its own levels). Unlisted accounts read (a public repository).
    permissions: dict[str, str] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def role_of(self, login: str) -> str:
        return self.permissions.get(login, "read")

    @property
    def owner(self) -> str:
        return self.path.rsplit("/", 1)[0]

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[1]

    def head(self, branch: str) -> str | None:
        """The branch's commit, read from the ref files (a loose ref, else packed-refs): every answer
        about a PR needs it, and a git process per PR made a page of 30 PRs take a second."""
        loose = self.bare / "refs" / "heads" / branch
        try:
            text = loose.read_text().strip()
            if len(text) == 40:
                return text
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            pass
        try:
            for line in (self.bare / "packed-refs").read_text().splitlines():
                if line.endswith(f" refs/heads/{branch}") and not line.startswith(("#", "^")):
                    return line.split(" ", 1)[0]
        except FileNotFoundError:
            pass
        return None

    def branches(self) -> list[str]:
        out = git(self.bare, "for-each-ref", "--format=%(refname:short)", "refs/heads")
        return [b for b in out.splitlines() if b]

    def resolve(self, ref: str) -> str | None:
        out = git(self.bare, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return out or None

    def pr(self, number: int) -> PR | None:
        return next((p for p in self.prs if p.number == number), None)

    def refresh(self, pr: PR) -> PR:
        """An open PR follows its branch: pushes move head_sha."""
        if pr.state == "open":
            pr.head_sha = self.head(pr.head) or pr.head_sha
            pr.base_sha = self.head(pr.base) or pr.base_sha
        return pr

    def checks_for(self, sha: str) -> list[CheckRun]:
        latest: dict[str, CheckRun] = {}
        for run in self.checks:
            if run.sha == sha:
                latest[run.name] = run
        return list(latest.values())

    def combined(self, sha: str) -> str:
        runs = self.checks_for(sha)
        if not runs:
            return "pending"
        if any(r.state == "failure" for r in runs):
            return "failure"
        return "success" if all(r.state == "success" for r in runs) else "pending"

    def missing_checks(self, pr: PR) -> list[str]:
        """Required checks of the base branch that are not green on the PR's head."""
        required = self.protected.get(pr.base)
        if required is None:
            return []
        green = {r.name for r in self.checks_for(pr.head_sha) if r.state == "success"}
        return [name for name in required if name not in green]

    def merge(self, pr: PR, method: str, by: str, *, expected_sha: str | None = None) -> str:
        with self.lock:
            self.refresh(pr)
            if pr.state != "open":
                raise MergeRefused("not_open", f"Pull request is {pr.state}")
            if method not in self.merge_methods:
                raise MergeRefused("method", f"{method} merges are not allowed on this repository")
            if expected_sha and expected_sha != pr.head_sha:
                raise MergeRefused("sha", "Head branch was modified. Review and try the merge again.")
            missing = self.missing_checks(pr)
            if missing:
                raise MergeRefused("protected", ", ".join(missing))
            sha = self._git_merge(pr, method)
            pr.state, pr.merged_sha, pr.merge_method, pr.merged_by = "merged", sha, method, by
            pr.merged_at = pr.closed_at = pr.updated_at = now()
            return sha

    def _git_merge(self, pr: PR, method: str) -> str:
        base_sha, head_sha = self.head(pr.base), pr.head_sha
        assert base_sha, f"base branch {pr.base} is gone"
        if method == "rebase":
            return self._git_rebase(pr, base_sha)
        done = subprocess.run(["git", "merge-tree", "--write-tree", base_sha, head_sha], cwd=self.bare,
                              env={**os.environ, **GIT_ENV}, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise MergeRefused("conflict", "Merge conflict")
        tree = done.stdout.split("\n", 1)[0].strip()
        if method == "squash":
            sha = git(self.bare, "commit-tree", tree, "-p", base_sha, "-m", f"{pr.title} (#{pr.number})\n\n{pr.body}")
        else:
            sha = git(self.bare, "commit-tree", tree, "-p", base_sha, "-p", head_sha,
                      "-m", f"Merge pull request #{pr.number} from {pr.head}\n\n{pr.title}")
        git(self.bare, "update-ref", f"refs/heads/{pr.base}", sha, base_sha)
        return sha

    def _git_rebase(self, pr: PR, base_sha: str) -> str:
        with tempfile.TemporaryDirectory(prefix="standin-rebase-") as scratch:
            work = Path(scratch)
            git(work, "init", "-q", "-b", "scratch")
            git(work, "fetch", "-q", str(self.bare), f"refs/heads/{pr.head}:refs/heads/scratch-head",
                f"refs/heads/{pr.base}:refs/heads/scratch-base")
            git(work, "checkout", "-q", "scratch-head")
            done = subprocess.run(["git", "rebase", "-q", "scratch-base"], cwd=work, env={**os.environ, **GIT_ENV},
                                  capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                raise MergeRefused("conflict", "Rebase conflict")
            sha = git(work, "rev-parse", "HEAD")
            git(work, "push", "-q", str(self.bare), f"{sha}:refs/heads/{pr.base}")
        return sha


def init_bare(bare: Path, default_branch: str, files: dict[str, str]) -> None:
    """A bare repository whose default branch holds `files` in one commit."""
    bare.mkdir(parents=True)
    git(bare, "init", "-q", "--bare", "-b", default_branch)
    git(bare, "config", "http.receivepack", "true")
    commit_files(bare, default_branch, files, "Initial commit")


def commit_files(bare: Path, branch: str, files: dict[str, str], message: str, start: str | None = None) -> str:
    """A commit on `branch` of a bare repository (made on the server, as by a person on the forge);
    a new branch starts at `start` (a branch name)."""
    with tempfile.TemporaryDirectory(prefix="standin-commit-") as scratch:
        work = Path(scratch)
        git(work, "init", "-q", "-b", branch)
        parent = git(bare, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
        source = branch if parent else start
        if source:
            git(work, "fetch", "-q", str(bare), f"refs/heads/{source}")
            git(work, "reset", "-q", "--hard", "FETCH_HEAD")
        for name, text in files.items():
            target = work / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        git(work, "add", "-A")
        git(work, "commit", "-q", "--allow-empty", "-m", message)
        sha = git(work, "rev-parse", "HEAD")
        git(work, "push", "-q", str(bare), f"HEAD:refs/heads/{branch}")
    return sha
