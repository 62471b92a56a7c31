"""Worktree mode (R-WT-1 … R-WT-7): each task in its own checkout of the person's repository.

The daemon calls, per task:

    prepared = prepare(local_path, env_root, agent_name, task_id)   # before the agent
    ...  # run the agent in prepared.start_dir; store prepared.branch on the task
    result = finalize(prepared)                                       # after it, also on failure

and once at start-up, before taking tasks: `recover([workspaces_root])`. All three block (git runs
as subprocesses with timeouts); from the event loop use `asyncio.to_thread`. Before `finalize`,
stop the agent's processes and take out what the daemon itself wrote into the worktree (the
instruction-file block, .predictorx/project/resources.json), or it is committed as leftovers.

How the person's state is reproduced without touching it: their index is copied (with its mtime,
so git's racy-entry check still works) to a file in the env root; `git add --update` and
`git update-index --add` (for the untracked files, checked first) run against that copy and their
working tree — cheap, because the copied stat data tells git which files changed — then
`write-tree` and `commit-tree -p HEAD` give a *baseline* commit of exactly what they see. The
task's checkout starts on a new branch at that baseline, so the branch's own commits are the
agent's work and nothing else. Their working copy, index and stash list are only read.

The task's checkout (still called its worktree) is a repository of its own (`runrepo`) that
borrows the person's objects: the person's `.git` — its config, hooks, refs — is never the run's
to write (read-only in the sandbox), and the agent's git dir is never read as configuration by
the daemon: its commits and leftovers reach the person's branch through `delivery`.

Nothing is lost silently: `finalize` brings the agent's commits and what it left uncommitted onto
the task's branch, keeps the checkout (and says where) if that fails or the agent's work does not
build on the task's branch — the work is then also kept in the person's repository as
`refs/predictorx/kept/<task>` — and deletes the branch only when it holds nothing beyond the
baseline. Only the task's branch is ever written in the person's repository: whatever branch the
agent switched to in its checkout is its own copy. A JSON marker in the env root lets a restarted
daemon find and finish what a crash left behind; while it exists (also in state `kept`), GC leaves
the env root alone.

Not reproduced, so refused (never run in place instead): submodules (gitlinks in the index), and
untracked state that a commit cannot hold faithfully (symlinks, nested repositories, over limits).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

from . import delivery, quarantine, runrepo
from .branches import NoFreeBranch, create_free_branch, ref_component, task_branch
from .gitcmd import KEPT_REFS, GitError, git, git_text

#: The person's refs a task's repository starts with (its own branch aside).
PERSONS_REFS = ("refs/heads/", "refs/remotes/", "refs/tags/")

MAX_UNTRACKED_FILES = 2000
MAX_UNTRACKED_BYTES = 200 * 1024 * 1024
MARKER = ".predictorx-worktree.json"
WORKDIR = "workdir"
TIMEOUT = 300.0  # per git command; a checkout of a very large repository takes a while

_FIX_HINT = ("Add build output to .gitignore or clean it up (`git clean -n` shows what would go), "
             "then run the task again.")
_FALLBACK_NAME = "Predictor X"
_FALLBACK_EMAIL = "predictorx@localhost"


class WorktreeError(RuntimeError):
    """The task cannot run in (or leave) a worktree; the message says why and what to do."""


@dataclass(frozen=True)
class Prepared:
    worktree_dir: Path
    start_dir: Path          # where the agent starts: the resource's sub-folder inside the worktree
    branch: str              # agent/<agent>/<task>, possibly with a -N suffix
    baseline_commit: str     # the person's state when the task started (== base_commit if clean)
    base_commit: str         # their HEAD at that moment
    repo_dir: Path           # top of the person's working copy
    env_root: Path
    agent_name: str = ""
    task_id: str = ""
    git_dir: Path | None = None  # the person's repository's (common) git dir; found again if None
    #: A follow-up continuing an existing branch (issue 22 §5): the branch is never deleted here.
    continuing: bool = False


@dataclass(frozen=True)
class Finalized:
    branch: str | None               # None when the branch was deleted (the task changed nothing)
    commits: tuple[str, ...]         # the task's commits on the branch, oldest first
    kept_worktree: bool
    message: str                     # one or two sentences for the task's log and details
    error: str | None = None         # set when the task must fail: the work is kept, see message


def index_lock(local_path: str | os.PathLike[str], timeout: float = 10.0) -> Path | None:
    """Where git puts the lock of the working copy's index (it exists while git changes it), or
    None when `local_path` is not in a git working copy (prepare() says so properly)."""
    try:
        index = git_text(["rev-parse", "--path-format=absolute", "--git-path", "index"], cwd=local_path,
                         timeout=timeout)
    except GitError:
        return None
    return Path(index + ".lock")


# --- prepare ------------------------------------------------------------------------------------

def prepare(
    local_path: str | os.PathLike[str],
    env_root: str | os.PathLike[str],
    agent_name: str,
    task_id: str,
    *,
    max_untracked_files: int = MAX_UNTRACKED_FILES,
    max_untracked_bytes: int = MAX_UNTRACKED_BYTES,
    timeout: float = TIMEOUT,
    continuing: tuple[str, Callable[[Path], str]] | None = None,
) -> Prepared:
    """Make the task's worktree from what the person sees in `local_path`; raise WorktreeError.

    Never falls back to running in place. On failure nothing is left behind but the env root.
    """
    local = Path(os.path.realpath(local_path))
    env = Path(os.path.realpath(env_root))
    top, prefix, index_path, common, base, base_tree = _repo_info(local, timeout)
    if env == top or _is_inside(env, top):
        raise WorktreeError(f"the task's env root {env} is inside the repository {top}; "
                            "the worktree would show up in your working copy")
    _refuse_submodules(top, timeout)
    wt_dir = env / WORKDIR
    if wt_dir.exists():
        raise WorktreeError(f"{wt_dir} already exists; a task's worktree is made only once")
    env.mkdir(parents=True, exist_ok=True)

    if continuing is not None:
        # A follow-up starts from its branch (brought up to its forge's head by `start_at`), not
        # from what the person sees: their working copy is on another branch of their own.
        return _prepare_continuing(top, prefix, Path(common), env, wt_dir, agent_name, task_id, continuing, timeout)
    untracked = _untracked_files(top, max_untracked_files, max_untracked_bytes, timeout)
    baseline = _baseline_commit(top, index_path, env, untracked, base, base_tree, task_id, timeout)

    marker = env / MARKER
    record = {"version": 1, "state": "preparing", "repo_dir": str(top), "worktree_dir": str(wt_dir),
              "start_dir": str(wt_dir / prefix), "branch": None, "baseline_commit": baseline,
              "base_commit": base, "env_root": str(env), "agent_name": agent_name, "task_id": task_id,
              **_owner()}
    _write_marker(marker, record)
    branch = None
    try:
        branch = _create_branch(top, agent_name, task_id, baseline, timeout)
        record["branch"] = branch
        _write_marker(marker, record)
        # A repository of its own, borrowing the person's objects: their `.git` (config, hooks,
        # refs) is never the run's to write, and is mounted read-only in the sandbox.
        origin = _origin_url(top, timeout)
        runrepo.create(Path(common), wt_dir, branch=branch, commit=baseline, remote_url=origin,
                       refs=PERSONS_REFS, timeout=timeout)
        if origin is None:
            # The person's repository as a remote: a repository without one is known by its folder's
            # name (agents-room's repo room, `repo:<name>`), so the run is named as the person's own
            # session there is, not after the worktree's folder.
            runrepo.add_remote(wt_dir, "person", str(top), timeout=timeout)
        start = wt_dir / prefix
        start.mkdir(parents=True, exist_ok=True)  # a sub-folder holding only ignored files
        record["state"] = "ready"
        _write_marker(marker, record)
    except BaseException as e:
        try:
            _undo_prepare(top, wt_dir, branch, baseline, timeout, task_id)
            marker.unlink(missing_ok=True)
        except Exception:  # noqa: BLE001 — the marker stays for recover(); the first error is the one to report
            pass

        if isinstance(e, GitError):
            raise WorktreeError(f"could not create the task's worktree of {top}: {e.stderr or e}") from e
        raise
    quarantine.prepare(env / ".delivery", Path(common))  # the delivery's, made while the agent works
    return Prepared(wt_dir, start, branch, baseline, base, top, env, agent_name, task_id, Path(common))


def _prepare_continuing(top: Path, prefix: str, common: Path, env: Path, wt_dir: Path, agent_name: str,
                        task_id: str, continuing: tuple[str, Callable[[Path], str]], timeout: float) -> Prepared:
    branch, start_at = continuing
    try:
        start = start_at(common)
    except (GitError, RuntimeError) as e:  # RuntimeError: forgepush.PushError, a sentence already
        raise WorktreeError(f"could not bring branch {branch} of {top} up to date from its forge: {e}") from e
    marker = env / MARKER
    record = {"version": 1, "state": "preparing", "repo_dir": str(top), "worktree_dir": str(wt_dir),
              "start_dir": str(wt_dir / prefix), "branch": branch, "baseline_commit": start,
              "base_commit": start, "env_root": str(env), "agent_name": agent_name, "task_id": task_id,
              "continuing": True, **_owner()}
    _write_marker(marker, record)
    try:
        runrepo.create(common, wt_dir, branch=branch, commit=start, remote_url=_origin_url(top, timeout),
                       refs=PERSONS_REFS, timeout=timeout)
        (wt_dir / prefix).mkdir(parents=True, exist_ok=True)
        record["state"] = "ready"
        _write_marker(marker, record)
    except BaseException as e:
        shutil.rmtree(wt_dir, ignore_errors=True)
        marker.unlink(missing_ok=True)
        if isinstance(e, GitError):
            raise WorktreeError(f"could not create the task's worktree of {top}: {e.stderr or e}") from e
        raise
    quarantine.prepare(env / ".delivery", common)
    return Prepared(wt_dir, wt_dir / prefix, branch, start, start, top, env, agent_name, task_id, common,
                    continuing=True)


def _origin_url(top: Path, timeout: float) -> str | None:
    url = git(["config", "--get", "remote.origin.url"], cwd=top, timeout=timeout, check=False).stdout
    return url.decode("utf-8", "surrogateescape").strip() or None


def _repo_info(local: Path, timeout: float) -> tuple[Path, str, Path, str, str, str]:
    """(top of the working copy, local's path inside it, the index file of that working copy,
    the repository's common git dir, HEAD, HEAD's tree) — one git call when all is well."""
    query = ["rev-parse", "--path-format=absolute", "--show-toplevel", "--show-prefix",
             "--git-path", "index", "--git-common-dir"]
    try:
        out = git([*query, "HEAD^{commit}", "HEAD^{tree}"], cwd=local, timeout=timeout)
        top, prefix, index, common, head, tree = out.stdout.decode("utf-8", "surrogateescape").split("\n")[:6]
        return Path(top), prefix.rstrip("/"), Path(index), common, head, tree
    except GitError as e:
        if e.returncode is None:
            raise WorktreeError(f"git did not answer in {local}: {e.stderr}") from e
    try:  # which of the two: no repository, or a repository without a commit? (R-WT-6: never in place)
        top = git_text(query[:3], cwd=local, timeout=timeout).split("\n")[0]
    except GitError as e:
        raise WorktreeError(f"{local} is not inside a git repository with a working copy; worktree mode "
                            "needs one (the task never falls back to running in place). "
                            f"Run `git init` and commit there, or use in_place mode. (git: {e.stderr})") from e
    raise WorktreeError(f"the git repository at {top} has no commit yet; worktree mode needs at least "
                        "one commit. Commit something first (the task never falls back to running in place).")


def _refuse_submodules(top: Path, timeout: float) -> None:
    """A worktree would show a submodule as an empty folder and drop the changes made inside it,
    so the agent would not start from what the person sees (R-WT-2): refuse, never run in place."""
    out = git(["ls-files", "--stage", "-z"], cwd=top, timeout=timeout).stdout
    gitlinks = [e.split(b"\t", 1)[-1].decode("utf-8", "replace")
                for e in out.split(b"\0") if e.startswith(b"160000 ")]
    if gitlinks:
        shown = ", ".join(gitlinks[:3]) + (f" and {len(gitlinks) - 3:,} more" if len(gitlinks) > 3 else "")
        raise WorktreeError(f"{top} has submodules ({shown}), which worktree mode cannot reproduce yet: "
                            "their folders would be empty and changes inside them would be lost. "
                            "Use in_place mode for this folder (the task never falls back to running "
                            "in place by itself).")


def _untracked_files(top: Path, max_files: int, max_bytes: int, timeout: float) -> list[bytes]:
    """Untracked, not ignored files (paths relative to top), checked against the limits and for
    anything a commit cannot reproduce faithfully."""
    out = git(["ls-files", "-z", "--others", "--exclude-standard"], cwd=top, timeout=timeout).stdout
    paths = [p for p in out.split(b"\0") if p]
    if len(paths) > max_files:
        raise WorktreeError(f"{top} has {len(paths):,} untracked files that are not ignored; a worktree "
                            f"reproduces at most {max_files:,}. {_FIX_HINT}")
    total = 0
    for rel in paths:
        shown = rel.decode("utf-8", "replace")
        if rel.endswith(b"/"):  # git lists an untracked nested repository as its directory
            raise WorktreeError(f"{shown} in {top} is an untracked nested git repository, which a worktree "
                                f"cannot reproduce faithfully. {_FIX_HINT}")
        try:
            st = os.lstat(os.path.join(os.fsencode(top), rel))
        except FileNotFoundError:
            raise WorktreeError(f"the untracked file {shown} in {top} vanished while the task was starting; "
                                f"the state cannot be reproduced faithfully. {_FIX_HINT}") from None
        if stat.S_ISLNK(st.st_mode):
            raise WorktreeError(f"the untracked file {shown} in {top} is a symlink, which a worktree cannot "
                                f"reproduce faithfully. {_FIX_HINT}")
        if not stat.S_ISREG(st.st_mode):
            raise WorktreeError(f"the untracked {shown} in {top} is not a regular file and cannot be "
                                f"reproduced. {_FIX_HINT}")
        total += st.st_size
        if total > max_bytes:
            raise WorktreeError(f"the untracked files that are not ignored in {top} are larger than "
                                f"{max_bytes / 2**20:,.0f} MiB, the most a worktree reproduces. {_FIX_HINT}")
    return paths


def _baseline_commit(top: Path, index_path: Path, env: Path, untracked: list[bytes], head: str,
                     head_tree: str, task_id: str, timeout: float) -> str:
    """A commit of exactly what the person sees (child of HEAD), or HEAD itself if that is clean."""
    tmp_index = env / ".predictorx-baseline.index"
    genv = {"GIT_INDEX_FILE": str(tmp_index)}
    try:
        if index_path.exists():
            shutil.copy2(index_path, tmp_index)  # copy2 keeps the mtime: racy entries stay detected
        else:
            git(["read-tree", "HEAD"], cwd=top, env=genv, timeout=timeout)
        git(["add", "--update"], cwd=top, env=genv, timeout=timeout)
        if untracked:  # exactly the files we checked; a file made since then is not taken along
            try:
                # update-index, not `add <paths>`: add matches every file of the tree against every
                # pathspec, which for 2,000 paths costs 5× more than hashing them.
                git(["update-index", "--add", "-z", "--stdin"], cwd=top, timeout=timeout, env=genv,
                    input=b"".join(p + b"\0" for p in untracked))
            except GitError as e:
                if "does not exist" not in e.stderr:
                    raise
                raise WorktreeError(f"an untracked file in {top} vanished while the task was starting "
                                    f"(git: {e.stderr.splitlines()[0]}); the state cannot be reproduced "
                                    f"faithfully. {_FIX_HINT}") from e
        tree = git_text(["write-tree"], cwd=top, env=genv, timeout=timeout)
    except GitError as e:
        raise WorktreeError(f"could not take a snapshot of the uncommitted state of {top}: {e.stderr}") from e
    finally:
        tmp_index.unlink(missing_ok=True)
    if tree == head_tree:
        return head
    message = (f"Baseline: your uncommitted changes when task {task_id} started\n\n"
               "Made by Predictor X from your working copy (which it did not touch), so that the\n"
               "agent's commits on this branch show apart from your own work.\n")
    # commit-tree never signs (commit.gpgSign is for porcelain commits): the baseline is ours.
    args = ["commit-tree", tree, "-p", head, "-m", message]
    try:
        return git_text(args, cwd=top, timeout=timeout)
    except GitError:
        pass  # most likely no identity configured: try once more with ours
    try:
        return git_text(args, cwd=top, env=_identity_env(top, timeout), timeout=timeout)
    except GitError as e:
        raise WorktreeError(f"could not record the baseline commit in {top}: {e.stderr}") from e


def _create_branch(top: Path, agent_name: str, task_id: str, commit: str, timeout: float) -> str:
    """Create the task's branch atomically (it must not exist yet), by the one collision rule."""
    def create(name: str) -> None:
        git(["update-ref", "-m", "predictorx: task branch", f"refs/heads/{name}", commit, ""],
            cwd=top, timeout=timeout)

    try:
        return create_free_branch(task_branch(agent_name, task_id), create, GitError)
    except NoFreeBranch as e:
        raise WorktreeError(f"could not create a branch for task {task_id} in {top}: {e}") from None


def _undo_prepare(top: Path, wt_dir: Path, branch: str | None, baseline: str, timeout: float,
                  name: str = "") -> str | None:
    """Take back a half-made task checkout; the agent never ran in it, so there is nothing of its own."""
    if wt_dir.is_dir() and not wt_dir.is_symlink():
        shutil.rmtree(wt_dir, ignore_errors=True)
    git(["worktree", "prune"], cwd=top, timeout=timeout, check=False)  # an older daemon's linked worktree
    if branch:  # only if it still points at the baseline: never drop a commit
        git(["update-ref", "-d", f"refs/heads/{branch}", baseline], cwd=top, timeout=timeout, check=False)
    return None


# --- finalize -----------------------------------------------------------------------------------

def finalize(prepared: Prepared, *, timeout: float = TIMEOUT,
             delivered: Callable[[str | None], None] | None = None,
             push_from: delivery.PushFrom | None = None) -> Finalized:
    """After the agent (also after a failure or cancellation, once its processes are gone):
    commit its leftovers to the branch, then remove the worktree — or keep it if that failed.
    `delivered(tip)` is called once the work is on the branch, before the worktree is removed:
    with the branch's new tip when the task added commits to it cleanly, else None (the daemon
    starts the push there and reads what it still needs from the worktree). `push_from`: see
    delivery.deliver (the push starts from its quarantine, before the fetch into the repository).

    Returns a Finalized; when `error` is set the task must fail with it (the work is kept in the
    worktree the message names). Raises WorktreeError only when git itself fails on the repository
    (then nothing was removed).
    """
    try:
        return _finalize(prepared, timeout, delivered or (lambda tip: None), push_from)
    except GitError as e:
        raise WorktreeError(f"could not finish the worktree {prepared.worktree_dir} of {prepared.repo_dir}; "
                            f"it was left as it is ({e})") from e


def _finalize(p: Prepared, timeout: float, delivered: Callable[[str | None], None],
              push_from: delivery.PushFrom | None = None) -> Finalized:
    top, wt, ref = p.repo_dir, p.worktree_dir, f"refs/heads/{p.branch}"
    marker = p.env_root / MARKER
    note = None
    if wt.is_dir() and not wt.is_symlink():
        git_dir = p.git_dir or Path(git_text(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=top,
                                             timeout=timeout))
        told: list[str | None] = []

        def tell(done: delivery.Delivered) -> None:  # as soon as the branch holds it (the push starts)
            told.append(done.tip if done.problem is None and done.tip != p.baseline_commit else None)
            delivered(told[0])
        try:  # the run's git dir is read as data only: nothing the agent wrote there runs (`delivery`)
            done = delivery.deliver(wt, git_dir, p.branch, p.baseline_commit, agent_name=p.agent_name,
                                    task_id=p.task_id, scratch=p.env_root / ".delivery",
                                    keep_ref=f"{KEPT_REFS}/{ref_component(p.task_id or p.env_root.name, 'worktree')}",
                                    delivered=tell, push_from=push_from, timeout=timeout)
            problem, note = done.problem, done.note
        except delivery.DeliveryError as e:
            problem = str(e)
        if not told:
            delivered(None)
        if problem is not None:
            problem = (f"{problem[0].upper()}{problem[1:]}. The task's folder {wt} was kept so nothing is lost: "
                       f"it is a git repository of its own (borrowing {top}'s objects); look at it with "
                       f"`git -C {wt} status`, then delete the folder.")
            _update_marker(marker, state="kept", error=problem)
            return Finalized(p.branch, _commits(p, timeout), True, problem, error=problem)
        _remove_soon(wt, p.env_root)
    else:
        delivered(None)
    if p.git_dir is None or (p.git_dir / "worktrees").is_dir():  # an older daemon's linked worktree
        git(["worktree", "prune"], cwd=top, timeout=timeout, check=False)

    commits = _commits(p, timeout)
    if commits:
        message = (f"The task's work is on branch {p.branch} ({len(commits)} commit"
                   f"{'s' if len(commits) != 1 else ''}); review it with git log / git diff — "
                   "nothing was merged.")
        branch: str | None = p.branch
    elif p.continuing:  # the branch holds earlier tasks' work: it stays, this task added nothing
        message = f"The task added nothing to branch {p.branch}; it stays as it was."
        branch = None
    else:
        # Only when the branch still points at the baseline: the old value guards every commit.
        r = git(["update-ref", "-d", ref, p.baseline_commit], cwd=top, timeout=timeout, check=False)
        if r.returncode == 0:
            message = "The task changed nothing, so its branch was deleted."
            branch = None
        else:  # the agent moved the branch back behind the baseline: leave it as it is
            message = f"The task made no commits of its own; its branch {p.branch} was left where the agent put it."
            branch = p.branch
    if note:
        message = f"{message} Note: {note}."
    marker.unlink(missing_ok=True)
    return Finalized(branch, commits, False, message)


def _remove_soon(folder: Path, env_root: Path) -> None:
    """The delivered worktree out of the way at once (a rename into the env root's scratch), its
    files deleted in a thread: the task's review and finish (the PR opening, issue 22) need not
    wait for a large tree's removal. A daemon stopped meanwhile leaves it in the env root, which
    GC removes whole."""
    trash = env_root / ".delivery" / f"removed-{uuid.uuid4().hex}"
    try:
        trash.parent.mkdir(parents=True, exist_ok=True)
        os.rename(folder, trash)
    except OSError:
        shutil.rmtree(folder)
        return
    threading.Thread(target=shutil.rmtree, args=(trash,), kwargs={"ignore_errors": True}, daemon=True,
                     name="px-remove-worktree").start()


def _commits(p: Prepared, timeout: float) -> tuple[str, ...]:
    out = git(["rev-list", "--reverse", f"{p.baseline_commit}..refs/heads/{p.branch}"],
              cwd=p.repo_dir, timeout=timeout, check=False)
    return tuple(out.stdout.decode().split()) if out.returncode == 0 else ()


# --- recover ------------------------------------------------------------------------------------

def recover(roots: Iterable[str | os.PathLike[str]], *, timeout: float = TIMEOUT) -> list[str]:
    """At daemon start: finish what a previous run left. Each root is an env root or a folder
    whose children or grandchildren are env roots. Worktrees whose owning process is still alive
    (another daemon on this machine) are left alone. Returns sentences for the log."""
    said: list[str] = []
    for marker in _find_markers(roots):
        try:
            sentence = _recover_one(marker, timeout)
        except Exception as e:  # noqa: BLE001 — one broken record must not stop the others, nor the daemon
            sentence = f"Could not recover the worktree recorded in {marker}: {e}"
        if sentence:
            said.append(sentence)
    return said


def _recover_one(marker: Path, timeout: float) -> str | None:
    try:
        rec = json.loads(marker.read_text())
    except (OSError, ValueError):
        return f"Ignored an unreadable worktree record {marker}."
    if _owner_alive(rec):
        return None
    wt, top, task = Path(rec["worktree_dir"]), Path(rec["repo_dir"]), rec.get("task_id")
    if not top.is_dir():
        return (f"The repository {top} of task {task} is gone; its worktree {wt} was left as it is "
                f"(remove {marker} once you have looked).")
    if rec.get("state") == "preparing" and rec.get("continuing"):  # the branch was there before: keep it
        shutil.rmtree(wt, ignore_errors=True)
        marker.unlink(missing_ok=True)
        return f"Removed the half-made worktree {wt} of task {task} (the agent never ran)."
    if rec.get("state") == "preparing" or not rec.get("branch"):
        kept = _undo_prepare(top, wt, rec.get("branch"), rec["baseline_commit"], timeout, task or "")
        marker.unlink(missing_ok=True)
        return (f"Removed the half-made worktree {wt} of task {task} "
                "(a previous run stopped while making it; the agent never ran)."
                + (f" {kept}" if kept else ""))
    prepared = Prepared(wt, Path(rec["start_dir"]), rec["branch"], rec["baseline_commit"], rec["base_commit"],
                        top, Path(rec["env_root"]), rec.get("agent_name", ""), task or "",
                        continuing=bool(rec.get("continuing")))
    try:
        result = finalize(prepared, timeout=timeout)
    except WorktreeError as e:
        return f"Could not finish the worktree {wt} of task {task}: {e}"
    if result.kept_worktree:
        return (f"Kept the worktree {wt} that task {task} left when a previous run stopped, instead of "
                f"removing it: {result.error or result.message}")
    return f"Finished the worktree {wt} that task {task} left when a previous run stopped: {result.message}"


def _find_markers(roots: Iterable[str | os.PathLike[str]]) -> list[Path]:
    found: set[Path] = set()
    for root in roots:
        r = Path(root)
        for pattern in (MARKER, f"*/{MARKER}", f"*/*/{MARKER}"):
            found.update(m for m in r.glob(pattern) if m.is_file())
    return sorted(found)


# --- small helpers ------------------------------------------------------------------------------

def _identity_env(cwd: Path, timeout: float) -> dict[str, str]:
    """A fallback identity only where git has none, so commits never fail for want of a name."""
    env: dict[str, str] = {}
    for who in ("AUTHOR", "COMMITTER"):
        if git(["var", f"GIT_{who}_IDENT"], cwd=cwd, timeout=timeout, check=False).returncode != 0:
            env[f"GIT_{who}_NAME"] = _FALLBACK_NAME
            env[f"GIT_{who}_EMAIL"] = _FALLBACK_EMAIL
    return env


def _is_inside(path: Path, top: Path) -> bool:
    try:
        path.relative_to(top)
        return True
    except ValueError:
        return False


def _owner() -> dict:
    me = psutil.Process()
    return {"pid": me.pid, "pid_started": me.create_time(), "created_at": time.time()}


def _owner_alive(rec: dict) -> bool:
    """The process that made the record still runs (pid and start time match, and it is not us —
    recover() runs before this process makes any worktree)."""
    pid = rec.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        return abs(psutil.Process(pid).create_time() - float(rec.get("pid_started", 0))) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def _write_marker(path: Path, record: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, path)


def _update_marker(path: Path, **changes) -> None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    record.update(changes)
    _write_marker(path, record)

