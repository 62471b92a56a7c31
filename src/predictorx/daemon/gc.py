"""Garbage collection of env roots and repo caches (R-EX-7, R-LD-6).

TTLs (defaults; the daemon may pass its own):

- an env root is removed `DEFAULT_ENV_ROOT_TTL` (7 days) after its task finished
  (`.gc_meta.json` ``finished_at``). An env root whose task never recorded an end (a daemon that
  died) counts from its last activity (newest mtime of its meta, logs/ and output/) and is only
  removed when `is_task_active` says the task is not running.
- a repo cache is removed `DEFAULT_REPO_CACHE_TTL` (30 days) after its last fetch or checkout, once
  no checkout in a remaining env root borrows its objects (and `git worktree prune` left it without
  an older daemon's linked worktrees), and only if no task branch in it holds commits the remote
  does not have.
- `GcTimer` runs `collect` every `DEFAULT_INTERVAL` (60 minutes), first right after start.

What GC never does: delete or enter a person's folder. A path recorded as ``local_path`` in any
env root's meta (plus whatever the caller passes in `protect`) is never deleted and nothing that
contains it is; an ``in_place`` env root only loses its own artefacts (output/, logs/, the meta);
symlinks are never followed; an env root holding a linked git worktree (an older daemon's) with
uncommitted changes is kept (and the report says which). GC runs no git in a repository of a run's
own (its config is the agent's): whether its work was delivered is the daemon's record's to say.

What GC never loses: a commit. An env root with a worktree-mode record
(`worktree.MARKER`, `.predictorx-worktree.json`) in any state is kept — `finalize` leaves the
record only when it kept the worktree on purpose (or has not finished), and the daemon's
`worktree.recover` is what finishes it; so is one with a checkout-delivery record
(`runcheckouts.PENDING`), which goes only once the run's checkouts reached the repo cache. Before
any linked worktree is removed, a HEAD commit that no
branch holds is anchored as `refs/predictorx/kept/<task>` in its repository (the report's
`anchored` says where), and a repo cache holding such refs with commits its remote lacks is kept.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Iterable

import filelock

from predictorx import config

from .envroot import META_NAME, parse_time, read_meta, utcnow
from .gitcmd import KEPT_REFS, anchor_unbranched_head, filters_off
from .gitdata import repository_dirs
from .repocache import CACHE_DIR_NAME, GitError, RepoCache, last_used, run_git
from .runcheckouts import PENDING as PENDING_DELIVERY, read_pending
from .worktree import MARKER as WORKTREE_MARKER

log = logging.getLogger(__name__)

DEFAULT_ENV_ROOT_TTL = timedelta(days=7)
DEFAULT_REPO_CACHE_TTL = timedelta(days=30)
DEFAULT_INTERVAL = timedelta(minutes=60)
GIT_TIMEOUT = 60.0
_TREE_SEARCH_DEPTH = 4  # env root → workdir → a checkout → one more level


@dataclass
class GcReport:
    removed_env_roots: list[Path] = field(default_factory=list)
    removed_repo_caches: list[Path] = field(default_factory=list)
    kept: list[tuple[Path, str]] = field(default_factory=list)
    errors: list[tuple[Path, str]] = field(default_factory=list)
    # (worktree, sentence): a removed worktree's HEAD commit that no branch held, and the ref now holding it
    anchored: list[tuple[Path, str]] = field(default_factory=list)

    def keep(self, path: Path, reason: str) -> None:
        self.kept.append((path, reason))

    def reason_kept(self, path: Path) -> str | None:
        return next((why for p, why in self.kept if p == path), None)

    def summary(self) -> str:
        lines = [f"gc: removed {len(self.removed_env_roots)} env root(s), "
                 f"{len(self.removed_repo_caches)} repo cache(s); kept {len(self.kept)}; "
                 f"{len(self.errors)} error(s)"]
        lines += [f"  kept {p}: {why}" for p, why in self.kept if why != _NOT_EXPIRED]
        lines += [f"  anchored {p}: {what}" for p, what in self.anchored]
        lines += [f"  error {p}: {why}" for p, why in self.errors]
        return "\n".join(lines)


_NOT_EXPIRED = "not expired"


def collect(
    workspaces_root: Path | None = None,
    now: datetime | None = None,
    env_root_ttl: timedelta = DEFAULT_ENV_ROOT_TTL,
    repo_cache_ttl: timedelta = DEFAULT_REPO_CACHE_TTL,
    is_task_active: Callable[[str], bool] = lambda task_id: False,
    *,
    protect: Iterable[Path | str] = (),
) -> GcReport:
    """One pass over `workspaces_root` (default: `config.workspaces_root()`).

    `is_task_active(task_id)` must say True for every task the daemon is running or preparing;
    its default (nothing is active) is right only when no daemon uses the root. `protect` adds
    folders that must never be deleted to those named in metas. An error on one entry is put in
    the report and the pass goes on.
    """
    root = (Path(workspaces_root) if workspaces_root is not None else config.workspaces_root()).absolute()
    now = now or utcnow()
    report = GcReport()
    if not root.is_dir():
        return report
    env_roots = list(_env_roots(root, report))
    protected = _protected_paths(env_roots, protect)
    for env in env_roots:
        try:
            _collect_env_root(root, env, now, env_root_ttl, is_task_active, protected, report)
        except (OSError, GitError) as exc:
            report.errors.append((env, str(exc)))
            log.warning("gc: %s: %s", env, exc)
    borrowed = _borrowed_object_stores(env_roots)
    for cache in RepoCache(root).list_caches():
        try:
            _collect_repo_cache(cache, now, repo_cache_ttl, report, borrowed)
        except (OSError, GitError) as exc:
            report.errors.append((cache, str(exc)))
            log.warning("gc: %s: %s", cache, exc)
    return report


# -- env roots ------------------------------------------------------------------------------------

def _env_roots(root: Path, report: GcReport) -> Iterable[Path]:
    """`<root>/<workspace>/<task>/` directories; hidden top-level entries (.repos) are not env roots."""
    for workspace in _scan(root):
        if workspace.name.startswith(".") or workspace.name == CACHE_DIR_NAME:
            continue
        if workspace.is_symlink():
            report.keep(Path(workspace.path), "a symlink; not followed")
            continue
        if not workspace.is_dir(follow_symlinks=False):
            continue
        for task in _scan(Path(workspace.path)):
            if task.is_symlink():
                report.keep(Path(task.path), "a symlink; not followed")
            elif task.is_dir(follow_symlinks=False):
                yield Path(task.path)


def _scan(path: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError:
        return []


def _protected_paths(env_roots: list[Path], extra: Iterable[Path | str]) -> list[Path]:
    paths = [Path(os.path.realpath(p)) for p in extra]
    for env in env_roots:
        local = (read_meta(env) or {}).get("local_path")
        if isinstance(local, str) and local:
            paths.append(Path(os.path.realpath(local)))
    return paths


def _collect_env_root(root: Path, env: Path, now: datetime, ttl: timedelta,
                      is_task_active: Callable[[str], bool], protected: list[Path], report: GcReport) -> None:
    meta = read_meta(env)
    if meta is None:
        report.keep(env, f"no readable {META_NAME}; not an env root GC can judge")
        return
    task_id = str(meta["task_id"])
    if is_task_active(task_id):
        report.keep(env, "task is active")
        return
    finished = parse_time(meta.get("finished_at"))
    since = finished or _last_activity(env)
    if now - since < ttl:
        report.keep(env, _NOT_EXPIRED)
        return
    record = env / WORKTREE_MARKER
    if os.path.lexists(record):
        report.keep(env, _worktree_record_reason(record))
        return
    if os.path.lexists(env / PENDING_DELIVERY):
        report.keep(env, _delivery_record_reason(env))
        return

    real = Path(os.path.realpath(env))
    real_root = Path(os.path.realpath(root))
    if real_root not in real.parents:
        report.keep(env, "resolves outside the workspaces root; not touched")
        return
    for folder in protected:
        if folder == real or real in folder.parents:
            report.keep(env, f"contains the local folder {folder}; never deleted")
            return

    # A repository of its own in an env root (a run's checkout, or one the agent made) is the
    # agent's: GC runs no git there (its config would be read), and its work was delivered or the
    # env root is kept by its record. Linked worktrees are an older daemon's.
    trees = [t for t in _git_trees(env) if _older_daemons_worktree(t, env)]
    for tree in trees:
        dirty = _uncommitted(tree)
        if dirty:
            report.keep(env, f"{tree} has uncommitted changes ({dirty}); kept so nothing is lost")
            return
    task_name = task_id or env.name
    held: list[tuple[Path, tuple[str, str]]] = []
    for tree in trees:
        try:
            anchor = anchor_unbranched_head(tree, task_name, timeout=GIT_TIMEOUT)
        except GitError as exc:
            report.keep(env, f"cannot tell whether the last commit of {tree} is on a branch ({exc}); "
                             "kept so nothing is lost")
            return
        if anchor is not None:
            held.append((tree, anchor))
    for tree, (ref, sha) in held:
        report.anchored.append((tree, f"its last commit {sha[:12]} was on no branch; kept as {ref} in its "
                                      "repository before the worktree was removed"))
        log.info("gc: %s: last commit %s was on no branch; kept as %s", tree, sha[:12], ref)
    for tree in trees:
        _remove_worktree(tree)

    if meta.get("workdir_kind") == "in_place":
        _remove_own_artefacts(env, report)
    else:
        shutil.rmtree(env)  # never follows symlinks inside the tree
        report.removed_env_roots.append(env)


def _worktree_record_reason(record: Path) -> str:
    """Why an env root with a worktree-mode record stays, in the record's own words."""
    try:
        rec = json.loads(record.read_text())
        if not isinstance(rec, dict):
            raise ValueError("not an object")
    except (OSError, ValueError):
        return (f"its worktree record {record.name} is unreadable; kept so nothing is lost "
                f"(the daemon's next start reports it; delete {record} once you have looked)")
    state = rec.get("state") or "unknown"
    where = (f"the task's checkout of {rec.get('repo_dir')} is {rec.get('worktree_dir')} "
             f"(`git -C {rec.get('worktree_dir')} status`)")
    if state == "kept":
        why = f" ({rec['error']})" if rec.get("error") else ""
        return (f"its worktree was kept on purpose when the task ended{why}; {WORKTREE_MARKER} says "
                f"'kept', and GC never removes it. {where}; once you have dealt with it, the daemon's "
                "next start finishes it.")
    return (f"its worktree record {WORKTREE_MARKER} says '{state}' (the task's worktree was never "
            f"finished); kept so nothing is lost — the daemon's next start finishes it. {where}.")


def _delivery_record_reason(env: Path) -> str:
    data = read_pending(env) or {}
    if data.get("state") == "kept":
        return (f"its checkouts hold work that could not be delivered ({data.get('why') or 'see the task'}); "
                f"kept so nothing is lost — delete {env / PENDING_DELIVERY} once you have looked")
    return (f"its checkouts were never delivered ({PENDING_DELIVERY}); kept so nothing is lost — the daemon's "
            "next start delivers them")


def _last_activity(env: Path) -> datetime:
    """Newest mtime of the meta, logs/, output/ and their direct entries (a log being appended)."""
    stamps = []
    for sub in (env / META_NAME, env / "logs", env / "output"):
        try:
            stamps.append(sub.lstat().st_mtime)
        except OSError:
            continue
        if sub.is_dir() and not sub.is_symlink():
            for entry in _scan(sub):
                try:
                    stamps.append(entry.stat(follow_symlinks=False).st_mtime)
                except OSError:
                    pass
    return datetime.fromtimestamp(max(stamps, default=0), timezone.utc)


def _remove_own_artefacts(env: Path, report: GcReport) -> None:
    """An in_place env root: our output/, logs/, an empty workdir/ and the meta; nothing else."""
    for name in ("output", "logs"):
        path = env / name
        if path.is_symlink():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
    workdir = env / "workdir"
    if workdir.is_symlink():
        workdir.unlink()  # the link only, never where it points
    elif workdir.is_dir():
        try:
            workdir.rmdir()
        except OSError:
            pass
    (env / META_NAME).unlink(missing_ok=True)
    try:
        env.rmdir()
    except OSError:
        left = ", ".join(sorted(p.name for p in env.iterdir()))
        report.keep(env, f"in_place env root: removed our artefacts, left what we did not make ({left})")
        return
    report.removed_env_roots.append(env)


def _git_trees(top: Path, depth: int = _TREE_SEARCH_DEPTH) -> Iterable[Path]:
    """Git working trees (worktrees or clones) inside `top`, without following symlinks."""
    for entry in _scan(top):
        if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
            continue
        path = Path(entry.path)
        if os.path.lexists(path / ".git"):
            yield path
        elif depth > 1:
            yield from _git_trees(path, depth - 1)


def _older_daemons_worktree(tree: Path, env: Path) -> bool:
    """A linked worktree of a repository outside the env root (the repo cache, a person's), which
    lists it back. A `.git` file an agent wrote naming a git dir it made (in its workdir) is not
    one: git run there would read the agent's config, hooks and nested repositories."""
    found = repository_dirs(tree / ".git")
    if found is None or found[0] == found[1]:
        return False
    common = Path(os.path.realpath(found[1]))
    real_env = Path(os.path.realpath(env))
    return common != real_env and real_env not in common.parents


def _uncommitted(tree: Path) -> str | None:
    """A short description of uncommitted work in `tree`, or None if it is clean."""
    try:
        # fsmonitor and filters off: a repository's config must not make GC run a program of its choosing;
        # nor a nested repository's (`status` would run in each submodule, with its own filters).
        out = run_git(["-c", "core.fsmonitor=false", *filters_off(tree, timeout=GIT_TIMEOUT), "status",
                       "--porcelain", "--untracked-files=normal", "--ignore-submodules=all"], cwd=tree, timeout=GIT_TIMEOUT)
    except GitError as exc:
        return f"cannot tell: {exc}"
    changed = [line for line in out.stdout.splitlines() if line.strip()]
    return f"{len(changed)} path(s), e.g. {changed[0][3:]}" if changed else None


def _remove_worktree(tree: Path) -> None:
    """Unregister a linked worktree from its repository (ours or a person's) before deleting it."""
    if not (tree / ".git").is_file():
        return  # a plain clone: deleting the directory is all there is
    try:
        common = run_git(["rev-parse", "--git-common-dir"], cwd=tree, timeout=GIT_TIMEOUT).stdout.strip()
        common_dir = (tree / common).resolve()
        run_git(["--git-dir", str(common_dir), "worktree", "remove", "--force", str(tree)],
                cwd=common_dir, timeout=GIT_TIMEOUT)
    except GitError as exc:
        # The directory is deleted anyway; for the repo cache the next `worktree prune` tidies up.
        log.info("gc: could not unregister worktree %s: %s", tree, exc)


# -- repo caches ----------------------------------------------------------------------------------

def _borrowed_object_stores(env_roots: list[Path]) -> dict[Path, Path]:
    """Object stores that checkouts in the env roots still standing borrow from (their
    `objects/info/alternates`, read as text) → one such checkout. A cache they name stays."""
    found: dict[Path, Path] = {}
    for env in env_roots:
        if not env.is_dir():
            continue
        for tree in _git_trees(env):
            alternates = tree / ".git" / "objects" / "info" / "alternates"
            if alternates.is_symlink() or not alternates.is_file():
                continue
            try:
                lines = alternates.read_text(errors="replace").splitlines()[:20]
            except OSError:
                continue
            for line in lines:
                if line.strip():
                    found.setdefault(Path(os.path.normpath(line.strip())), tree)
    return found


def _collect_repo_cache(cache: Path, now: datetime, ttl: timedelta, report: GcReport,
                        borrowed: dict[Path, Path] | None = None) -> None:
    lock = filelock.FileLock(cache.with_suffix(".lock"), timeout=0, thread_local=False)
    try:
        lock.acquire()
    except filelock.Timeout:
        report.keep(cache, "in use (a fetch or checkout holds its lock)")
        return
    try:
        def git(*args: str) -> str:
            return run_git(["--git-dir", str(cache), *args], cwd=cache, timeout=GIT_TIMEOUT).stdout

        git("worktree", "prune")
        if now - last_used(cache) < ttl:
            report.keep(cache, _NOT_EXPIRED)
            return
        listing = git("worktree", "list", "--porcelain")
        worktrees = [line[len("worktree "):] for line in listing.splitlines() if line.startswith("worktree ")][1:]
        if worktrees:
            report.keep(cache, f"still used by {len(worktrees)} worktree(s), e.g. {worktrees[0]}")
            return
        user = (borrowed or {}).get(Path(os.path.normpath(cache / "objects")))
        if user is not None:
            report.keep(cache, f"still used by a checkout that borrows its objects, e.g. {user}")
            return
        unpushed = git("rev-list", "--count", "--branches", f"--glob={KEPT_REFS}/*", "--not", "--remotes").strip()
        if unpushed not in ("", "0"):
            report.keep(cache, f"task branches (or {KEPT_REFS}/ refs) hold {unpushed} commit(s) the remote "
                               "does not have")
            return
        shutil.rmtree(cache)
        report.removed_repo_caches.append(cache)
    finally:
        lock.release()


# -- the timer ------------------------------------------------------------------------------------

class GcTimer:
    """Run `collect` in a worker thread every `interval`, first right after `start()`.

    `is_task_active(task_id)` is required here (the daemon knows what it runs); it and `protect`
    (the daemon's local folders, extra to those in metas) are called from that thread. A failing pass is logged and the
    timer goes on. Use `async with GcTimer(...)` or `start()` / `await stop()`.
    """

    def __init__(
        self,
        workspaces_root: Path | None = None,
        *,
        interval: timedelta = DEFAULT_INTERVAL,
        env_root_ttl: timedelta = DEFAULT_ENV_ROOT_TTL,
        repo_cache_ttl: timedelta = DEFAULT_REPO_CACHE_TTL,
        is_task_active: Callable[[str], bool],
        protect: Callable[[], Iterable[Path | str]] = lambda: (),
        on_report: Callable[[GcReport], None] | None = None,
    ):
        self.workspaces_root = workspaces_root
        self.interval = interval
        self.env_root_ttl = env_root_ttl
        self.repo_cache_ttl = repo_cache_ttl
        self.is_task_active = is_task_active
        self.protect = protect
        self.on_report = on_report
        self.last_report: GcReport | None = None
        self.runs = 0
        self._task: asyncio.Task | None = None

    async def run_once(self) -> GcReport:
        report = await asyncio.to_thread(
            collect, self.workspaces_root, None, self.env_root_ttl, self.repo_cache_ttl,
            self.is_task_active, protect=list(self.protect()),
        )
        self.last_report = report
        self.runs += 1
        if report.removed_env_roots or report.removed_repo_caches or report.errors or report.anchored:
            log.info("%s", report.summary())
        if self.on_report is not None:
            self.on_report(report)
        return report

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except Exception:  # one bad pass must not stop collection for good
                log.exception("gc pass failed")
            await asyncio.sleep(self.interval.total_seconds())

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="predictorx-gc")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def __aenter__(self) -> GcTimer:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
