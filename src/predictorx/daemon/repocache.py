"""The daemon's bare-repository cache and task checkouts (R-CTX-4).

Layout under the workspaces root::

    .repos/ws-<workspace>/       one folder per workspace (its id): no workspace's runs see another's
    .repos/ws-<workspace>/<name>-<hash>.git
                                 one bare repository per URL; <hash> = sha256 of the normalised
                                 URL (first 16 hex digits), <name> its last path part, for humans
    .repos/ws-<workspace>/<name>-<hash>.lock    the per-repository lock (filelock: across processes)
    .repos/ws-<workspace>/<name>-<hash>.git/predictorx-last-used
                                 epoch seconds of the last fetch/checkout, read by GC

The remote's branches are fetched to ``refs/remotes/origin/*`` and its tags to ``refs/tags/*``;
``refs/heads/*`` holds only the task branches (``agent/<agent>/<task>``) of the checkouts made
from the cache, so a fetch can never rewrite or prune a task's work. A checkout is a repository of
its own that borrows the cache's objects (`runrepo`); no run ever writes the cache — the daemon
brings a run's branch in (`delivery`) — so every config, hook and alternate here is the daemon's. Every git call goes through
the git CLI (`gitcmd`) with a timeout and no terminal prompts (a prompt would hang a daemon).
"""

from __future__ import annotations

import hashlib
import logging
import os
import posixpath
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Iterator
from urllib.parse import urlsplit, urlunsplit

import filelock

from predictorx import config

from ..resources.local_urls import SCP_LIKE, is_scp_like, local_source
from . import gitcmd, runrepo
from .gitcmd import GitError  # (the one git error; callers catch it from here too)
from .branches import NoFreeBranch, create_free_branch, ref_component, sanitize_branch, task_branch  # noqa: F401

log = logging.getLogger(__name__)

CACHE_DIR_NAME = ".repos"
WORKSPACE_PREFIX = "ws-"
LAST_USED_NAME = "predictorx-last-used"
DEFAULT_FETCH_TIMEOUT = 600.0
DEFAULT_GIT_TIMEOUT = 120.0


class RepoCacheError(RuntimeError):
    """Anything that stops a repository from being cached or checked out; the message says why."""


class URLNotAllowed(RepoCacheError):
    def __init__(self, url: str, allowed: list[str]):
        self.url = url
        self.allowed = allowed
        listed = ", ".join(allowed) if allowed else "(none: this task has no repositories)"
        super().__init__(f"repository {url} is not allowed for this task; allowed repositories: {listed}")


class RefNotFound(RepoCacheError):
    pass


class RepoCacheBusy(RepoCacheError):
    pass


class LocalPathRefused(RepoCacheError):
    """A `file://` URL (or a plain path) names a place the local-directory path rules refuse."""


def check_local_source(url: str) -> None:
    """R-LD-1 for repositories on this machine: a `file://` URL goes through the same path rules
    as a local directory (no /etc, /proc/<pid>/cwd, another user's home, …)."""
    path = local_source(url)
    if path is None:
        return
    from ..resources.local_directory_paths import PathRuleError, check_repository_path

    try:
        check_repository_path(path)
    except PathRuleError as e:
        raise LocalPathRefused(f"repository {url} cannot be used: {e}") from None


# -- git ------------------------------------------------------------------------------------------

#: Transports a repository URL may use. No run writes a cache's config any more (checkouts are
#: repositories of their own); before, `url.<x>.insteadOf` with `protocol.ext.allow` there made the
#: daemon's next fetch run `ext::<any command>`. Kept as defence in depth: it overrides any
#: `protocol.*` config.
ALLOWED_PROTOCOLS = "https:http:ssh:git:file"
#: For every command that talks to the remote, in depth too: `core.askPass` and
#: `remote.origin.uploadpack` (run through the shell for a file:// URL; the first value wins, so
#: only the command's own --upload-pack overrides it) were what an agent wrote into a cache.
_REMOTE_PROGRAMS_OFF = ("-c", "core.askPass=")
UPLOAD_PACK = "--upload-pack=git-upload-pack"


def git_env() -> dict[str, str]:
    """What the cache adds to `gitcmd`'s environment: no credential dialogs, no ssh questions,
    no transport but the usual ones."""
    extra = {"GCM_INTERACTIVE": "never", "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS}
    if "GIT_SSH_COMMAND" not in os.environ:
        extra["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    return gitcmd.git_env(extra)


def run_git(args: list[str], *, cwd: Path | str, timeout: float = DEFAULT_GIT_TIMEOUT,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    """`git -C cwd <args>` through `gitcmd` (timeout kills git's process group; no prompts;
    failures raise gitcmd's GitError), with the cache's environment and text output."""
    done = gitcmd.git(args, cwd=cwd, env=git_env(), timeout=timeout, check=check)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("utf-8", "replace"),
                                       done.stderr.decode("utf-8", "replace"))


# -- URLs and names -------------------------------------------------------------------------------

def normalize_url(url: str) -> str:
    """A comparison key for a git URL.

    `https://Host/o/r.git/`, `https://host/o/r` and `https://user:token@host/o/r` are one
    repository; `git@host:o/r` is written as `ssh://host/o/r`; a plain path becomes a `file://`
    URL. Only scheme and host are case-folded: paths are case-sensitive on many forges.
    """
    url = url.strip()
    if not url:
        raise ValueError("empty repository URL")
    if "://" not in url:
        if is_scp_like(url):
            scp = SCP_LIKE.match(url)
            url = f"ssh://{scp['host']}/{scp['path'].lstrip('/')}"
        else:
            url = "file://" + Path(os.path.abspath(url)).as_posix()
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if parts.port and not (scheme == "https" and parts.port == 443) and not (scheme == "http" and parts.port == 80):
        host = f"{host}:{parts.port}"
    path = parts.path
    if scheme == "file":
        path = posixpath.normpath(path) if path else path
    path = path.rstrip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")].rstrip("/")
    return urlunsplit((scheme, host, path, "", ""))


def check_allowed(url: str, allowed: Iterable[str]) -> str:
    """Return the normalised `url` if it is in `allowed` (compared normalised); else raise URLNotAllowed."""
    allowed = list(dict.fromkeys(allowed))
    key = normalize_url(url)
    for candidate in allowed:
        try:
            if normalize_url(candidate) == key:
                return key
        except ValueError:
            continue
    raise URLNotAllowed(url, allowed)


def repo_name(url: str) -> str:
    """`https://host/org/My.Repo.git` → `My.Repo`: a readable directory name for a checkout."""
    last = normalize_url(url).rsplit("/", 1)[-1]
    return _component(last, fallback="repo")


def _component(value: str, *, fallback: str = "x") -> str:
    """The one ref sanitiser (`branches.ref_component`), ASCII only: safe in a shell or URL too."""
    return ref_component(value, fallback, ascii_only=True)


def cache_key(url: str) -> str:
    normalized = normalize_url(url)
    digest = hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]
    return f"{_component(normalized.rsplit('/', 1)[-1], fallback='repo')[:40]}-{digest}"


# -- last used ------------------------------------------------------------------------------------

def touch_last_used(cache: Path, now: float | None = None) -> None:
    (cache / LAST_USED_NAME).write_text(f"{now if now is not None else time.time():.3f}\n")


def last_used(cache: Path) -> datetime:
    """When the cache was last fetched or checked out from (its directory's mtime if never recorded)."""
    try:
        stamp = float((cache / LAST_USED_NAME).read_text().strip())
    except (OSError, ValueError):
        stamp = cache.stat().st_mtime
    return datetime.fromtimestamp(stamp, timezone.utc)


# -- the cache ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Checkout:
    url: str
    path: Path
    branch: str
    commit: str
    ref: str  # what `ref` resolved to, e.g. "origin/main", "tag v1.2", or the commit
    cache: Path
    fetch_error: str | None = None  # set when the refresh failed and the cached copy was used


class RepoCache:
    """One bare cache per repository URL, fetched under a per-repository cross-process lock."""

    def __init__(self, root: Path | None = None, *, fetch_timeout: float = DEFAULT_FETCH_TIMEOUT,
                 git_timeout: float = DEFAULT_GIT_TIMEOUT, lock_timeout: float | None = None,
                 workspace: str | None = None):
        # Absolute: git runs with -C, so a relative path would be read from the wrong place.
        self.root = (Path(root) if root is not None else config.workspaces_root()).absolute()
        self.workspace = workspace
        # One cache per workspace: a repository's object store holds its tasks' delivered work, and
        # another workspace's runs (even of the same URL) must not read it (issue 29 finding 4).
        self.dir = self.root / CACHE_DIR_NAME
        if workspace is not None:
            self.dir = self.dir / f"{WORKSPACE_PREFIX}{_component(workspace, fallback='workspace')}"
        self.fetch_timeout = fetch_timeout
        self.git_timeout = git_timeout
        # Waiting for another process's fetch of the same repo is normal; bound it by what that
        # fetch may take at most, plus slack.
        self.lock_timeout = lock_timeout if lock_timeout is not None else fetch_timeout + 60

    def for_workspace(self, workspace: str) -> "RepoCache":
        """The caches of one workspace's tasks."""
        return RepoCache(self.root, fetch_timeout=self.fetch_timeout, git_timeout=self.git_timeout,
                         lock_timeout=self.lock_timeout, workspace=workspace)

    def cache_path(self, url: str) -> Path:
        return self.dir / f"{cache_key(url)}.git"

    def lock_path(self, url: str) -> Path:
        return self.dir / f"{cache_key(url)}.lock"

    @contextmanager
    def lock(self, url: str, timeout: float | None = None) -> Iterator[None]:
        """Hold the repository's lock; RepoCacheBusy if another holder keeps it past `timeout`."""
        self.dir.mkdir(parents=True, exist_ok=True)
        wait = self.lock_timeout if timeout is None else timeout
        lock = filelock.FileLock(self.lock_path(url), timeout=wait, thread_local=False)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise RepoCacheBusy(
                f"the cache of {url} is locked by another fetch or checkout (waited {wait:g}s); try again"
            ) from None
        try:
            yield
        finally:
            lock.release()

    def list_caches(self) -> list[Path]:
        """This cache's repositories (and, for the root, every workspace's)."""
        if not self.dir.is_dir():
            return []
        patterns = ["*.git"] + ([f"{WORKSPACE_PREFIX}*/*.git"] if self.workspace is None else [])
        return sorted(p for pattern in patterns for p in self.dir.glob(pattern)
                      if p.is_dir() and not p.is_symlink() and not p.parent.is_symlink())

    # -- fetching ---------------------------------------------------------------------------------
    def ensure(self, url: str, *, refresh: bool = True) -> Path:
        """Clone `url` into the cache if missing, else fetch it (if `refresh`); return the cache path.

        A failed refresh of an existing cache raises GitError; `checkout` instead falls back to the
        cached copy and says so.
        """
        with self.lock(url):
            cache, _ = self._ensure_locked(url, refresh=refresh, tolerate_fetch_error=False)
            return cache

    def _ensure_locked(self, url: str, *, refresh: bool, tolerate_fetch_error: bool) -> tuple[Path, str | None]:
        _refuse_option_like(url, "repository URL")
        check_local_source(url)  # every fetch: a folder fine yesterday may be a link into /proc today
        cache = self.cache_path(url)
        fetch_error = None
        if not cache.is_dir():
            self._create(url, cache)
        elif refresh:
            try:
                self._fetch(url, cache)
            except GitError as exc:
                if not tolerate_fetch_error:
                    raise
                fetch_error = str(exc)
                log.warning("could not refresh %s, using the cached copy: %s", url, exc)
        touch_last_used(cache)
        return cache, fetch_error

    def _create(self, url: str, cache: Path) -> None:
        # Build under a temporary name and rename at the end: a crash never leaves a cache that
        # looks complete. Leftovers of earlier crashes are ours to remove (we hold the lock).
        for leftover in self.dir.glob(f"{cache.name}.partial-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        tmp = cache.with_name(f"{cache.name}.partial-{os.getpid()}")
        try:
            run_git(["init", "--quiet", "--bare", str(tmp)], cwd=self.dir, timeout=self.git_timeout)
            self._git(tmp, "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
            self._fetch(url, tmp)
            os.replace(tmp, cache)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _fetch(self, url: str, cache: Path) -> None:
        # The URL is set on every fetch so that the spelling used last (e.g. a fresh token) wins.
        self._git(cache, "config", "remote.origin.url", url)
        self._git(cache, *_REMOTE_PROGRAMS_OFF, "fetch", UPLOAD_PACK, "--quiet", "--prune", "--tags", "--force",
                  "origin", timeout=self.fetch_timeout)
        if not self._rev(cache, "refs/remotes/origin/HEAD"):
            # New cache, or the remote's default branch moved: ask the remote (a network call).
            self._set_head(cache)

    def _set_head(self, cache: Path) -> None:
        """`git remote set-head origin --auto`, which has no --upload-pack of its own."""
        out = self._git(cache, *_REMOTE_PROGRAMS_OFF, "ls-remote", "--symref", UPLOAD_PACK, "origin", "HEAD",
                        timeout=self.fetch_timeout, check=False)
        for line in out.stdout.splitlines():
            target, _, name = line.partition("\t")
            if name == "HEAD" and target.startswith("ref: refs/heads/"):
                tracking = "refs/remotes/origin/" + target[len("ref: refs/heads/"):]
                if self._rev(cache, tracking):
                    self._git(cache, "symbolic-ref", "refs/remotes/origin/HEAD", tracking, check=False)
                return

    # -- checkout ---------------------------------------------------------------------------------
    def checkout(self, url: str, ref: str | None, dest_dir: Path, branch: str, *, refresh: bool = True) -> Checkout:
        """Make `dest_dir` a checkout of the cached `url` on a new branch `branch` started at `ref`.

        `ref` is a branch or tag of the remote or a commit; None means the remote's default branch.
        If `branch` already exists in the cache (a retried task, a second checkout), the one
        collision rule of `branches` picks the name (`-2`, `-3`, …); the branch used is in the result. `dest_dir` must not exist or be empty.
        """
        if ref is not None:
            _refuse_option_like(ref, "ref")
        dest_dir = Path(dest_dir).absolute()
        if dest_dir.exists() and (not dest_dir.is_dir() or any(dest_dir.iterdir())):
            raise RepoCacheError(f"cannot check {url} out into {dest_dir}: it exists and is not an empty directory")
        dest_dir.parent.mkdir(parents=True, exist_ok=True)
        with self.lock(url):
            cache, fetch_error = self._ensure_locked(url, refresh=refresh, tolerate_fetch_error=True)
            try:
                commit, described = self._resolve(cache, ref)
            except RefNotFound as exc:
                if fetch_error:
                    raise RefNotFound(f"{exc} (the refresh failed too: {fetch_error})") from None
                raise
            name = self.create_branch(cache, branch, commit)
            try:
                # A repository of its own, borrowing the cache's objects: nothing the run writes
                # there is ever the cache's (or its config), and the cache can stay read-only to it.
                runrepo.create(cache, dest_dir, branch=name, commit=commit, remote_url=url, timeout=self.git_timeout)
            except BaseException:
                self._git(cache, "update-ref", "-d", f"refs/heads/{name}", commit, check=False)
                shutil.rmtree(dest_dir, ignore_errors=True)
                raise
            touch_last_used(cache)
        return Checkout(url=url, path=dest_dir, branch=name, commit=commit, ref=described,
                        cache=cache, fetch_error=fetch_error)

    def checkout_continuing(self, url: str, dest_dir: Path, branch: str,
                            start_at: Callable[[Path], str]) -> Checkout:
        """`checkout` for a follow-up that continues `branch` (issue 22 §5): `start_at(cache)`
        fetches the branch's head from its forge into the cache and puts `refs/heads/<branch>`
        where the run starts (daemon/forgepush.py `fetch`, `adopt`); the checkout is on that same
        branch name, so the run's work is delivered onto it."""
        dest_dir = Path(dest_dir).absolute()
        if dest_dir.exists() and (not dest_dir.is_dir() or any(dest_dir.iterdir())):
            raise RepoCacheError(f"cannot check {url} out into {dest_dir}: it exists and is not an empty directory")
        dest_dir.parent.mkdir(parents=True, exist_ok=True)
        with self.lock(url):
            cache, fetch_error = self._ensure_locked(url, refresh=True, tolerate_fetch_error=True)
            commit = start_at(cache)
            try:
                runrepo.create(cache, dest_dir, branch=branch, commit=commit, remote_url=url, timeout=self.git_timeout)
            except BaseException:
                shutil.rmtree(dest_dir, ignore_errors=True)
                raise
            touch_last_used(cache)
        return Checkout(url=url, path=dest_dir, branch=branch, commit=commit, ref=f"the forge's {branch}",
                        cache=cache, fetch_error=fetch_error)

    def checkout_in_run(self, url: str, ref: str | None, dest_dir: Path, branch: str) -> Checkout:
        """`checkout` for an agent inside its run (`predictorx repo checkout`): the cache is only
        read (a sandbox shows it read-only, and only the repositories the task allows). `dest_dir`
        becomes a repository of its own borrowing the cache's objects if there is a cache, fetched
        from `url` to be current (the cached copy is used if that fails); the daemon brings its
        branch into the cache when the run ends (`delivery`)."""
        _refuse_option_like(url, "repository URL")
        if ref is not None:
            _refuse_option_like(ref, "ref")
        check_local_source(url)
        dest_dir = Path(dest_dir).absolute()
        if dest_dir.exists() and (not dest_dir.is_dir() or any(dest_dir.iterdir())):
            raise RepoCacheError(f"cannot check {url} out into {dest_dir}: it exists and is not an empty directory")
        cache = self.cache_path(url)
        source = cache if (cache / "objects").is_dir() else None
        try:
            git_dir = runrepo.init(dest_dir, source, remote_url=url, timeout=self.git_timeout)
            fetch_error = None
            try:
                self._git(git_dir, *_REMOTE_PROGRAMS_OFF, "fetch", UPLOAD_PACK, "--quiet", "--prune", "--tags",
                          "--force", "origin", timeout=self.fetch_timeout)
                if not self._rev(git_dir, "refs/remotes/origin/HEAD"):
                    self._set_head(git_dir)
            except GitError as exc:
                if source is None:
                    raise
                fetch_error = str(exc)
            commit, described = self._resolve(git_dir, ref)
            runrepo.start_branch(dest_dir, branch, commit, timeout=self.git_timeout)
        except BaseException:
            shutil.rmtree(dest_dir, ignore_errors=True)
            raise
        return Checkout(url=url, path=dest_dir, branch=branch, commit=commit, ref=described, cache=cache,
                        fetch_error=fetch_error)

    def _resolve(self, cache: Path, ref: str | None) -> tuple[str, str]:
        if ref is None:
            commit = self._rev(cache, "refs/remotes/origin/HEAD")
            if commit:
                head = self._git(cache, "symbolic-ref", "--short", "refs/remotes/origin/HEAD", check=False)
                return commit, head.stdout.strip() or "origin/HEAD"
            raise RefNotFound("the repository has no default branch (is it empty?); give a ref")
        candidates = [(f"refs/remotes/origin/{ref}", f"origin/{ref}"), (f"refs/tags/{ref}", f"tag {ref}")]
        if ref.startswith("refs/"):
            candidates.insert(0, (ref, ref))
        candidates.append((ref, ref))
        for spec, described in candidates:
            commit = self._rev(cache, spec)
            if commit:
                return commit, described
        branches = self._git(cache, "for-each-ref", "--format=%(refname:lstrip=3)", "--count=20",
                             "refs/remotes/origin/", check=False).stdout.split()
        known = ", ".join(b for b in branches if b != "HEAD") or "none"
        raise RefNotFound(f"ref {ref!r} is neither a branch, a tag nor a commit of the repository; branches: {known}")

    def delete_ref(self, cache: Path, ref: str) -> None:
        self._git(cache, "update-ref", "-d", ref, check=False)

    def create_branch(self, cache: Path, branch: str, commit: str) -> str:
        """The task's branch at `commit`, by the one collision rule (`branches`)."""
        def create(name: str) -> None:
            self._git(cache, "update-ref", "-m", "predictorx: task branch", f"refs/heads/{name}", commit, "")

        try:
            return create_free_branch(branch, create, GitError)
        except NoFreeBranch as e:
            raise RepoCacheError(str(e)) from None

    # -- helpers ----------------------------------------------------------------------------------
    def _rev(self, cache: Path, spec: str) -> str | None:
        out = self._git(cache, "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}", check=False)
        return (out.stdout.strip() or None) if out.returncode == 0 else None

    def _git(self, cache: Path, *args: str, timeout: float | None = None,
             check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_git(["--git-dir", str(cache), *args], cwd=cache, timeout=timeout or self.git_timeout,
                       check=check)


def _refuse_option_like(value: str, what: str) -> None:
    # A value starting with "-" would be read by git as an option.
    if not value or value.startswith("-"):
        raise RepoCacheError(f"{what} {value!r} is not valid")
