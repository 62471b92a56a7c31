"""Bringing a run's work into a repository the daemon owns, reading the run's git dir as data.

An agent's repository (`runrepo`) is the agent's: its config, hooks, alternates, `commondir`,
`config.worktree`, index extensions and refs are whatever the agent wrote. Running the daemon's git
there — `add`, `commit`, `status`, `log`, a fetch from it — would make git read them as settings,
and a single setting (`core.fsmonitor`, `filter.<x>.clean`, `include.path`, `core.alternateRefsCommand`
with an alternate, …) runs a program of the agent's choosing as the daemon, outside the sandbox. A
list of bad keys always misses one, so the daemon never does that. It:

1. makes a *quarantine* repository of its own (written as files by the daemon, config included;
   system and global config off; its only alternate the target's object store);
2. copies into it, as plain files, the object files of the agent's git dir — loose objects and
   pack/index pairs, regular files only (no symlinks, no `info/alternates`, no commit-graph) — and
   reads the agent's HEAD and task branch as text, each checked to be a commit id present there
   (one `cat-file --batch-check`);
3. commits the files the agent left (its work tree, read as data) on top of that HEAD, with an index
   of the daemon's own, in the quarantine;
4. fetches the task's branch from the quarantine into the target (the daemon's repo cache or the
   person's repository), whose config no run can write — unless the branch is there already.

The agent's work tree and git dir are only ever read; nothing of it is configuration.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import uuid
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .branches import ref_component
from .gitcmd import DEFAULT_TIMEOUT, GitError, git, git_text, sealed_env
from . import quarantine as quarantine_files
from .gitdata import SHA as _SHA, open_regular, read_small, ref_value
from .runrepo import is_own_repository
from .. import steptimes

#: The most bytes of object files taken from a run's repository (a hostile agent could write more).
MAX_IMPORT_BYTES = 8 * 2**30
MAX_INDEX_BYTES = 256 * 2**20
_LOOSE_DIR = re.compile(r"^[0-9a-f]{2}$")
_LOOSE = re.compile(r"^[0-9a-f]{38}$")
_PACK = re.compile(r"^(pack-[0-9a-f]{40})\.(pack|idx)$")
_IDENT = re.compile(r"^(.*) <([^<>]*)> \d+ [+-]\d{4}$")
UPLOAD_PACK = "--upload-pack=git-upload-pack"
log = logging.getLogger("predictorx.daemon")


class DeliveryError(RuntimeError):
    """The run's work could not be brought into the target; the message says why."""


@dataclass(frozen=True)
class Delivered:
    tip: str                  # where the target's branch points now
    leftovers: bool           # the files the agent left were committed
    problem: str | None = None  # some of the work is not on the branch: why, in a sentence
    note: str | None = None     # something worth saying that lost nothing


@dataclass(frozen=True)
class _RunRefs:
    head: str | None          # the commit the run's HEAD is on, if readable and present
    branch_tip: str | None    # the run's own copy of the task branch, if readable and present
    note: str | None = None
    head_branch: str | None = None  # the branch the run's HEAD is on, if any


def deliver(run_tree: Path, target: Path, branch: str, start: str | None, *, agent_name: str, task_id: str,
            scratch: Path, ref: str | None = None, keep_ref: str | None = None,
            delivered: Callable[[Delivered], None] | None = None,
            push_from: PushFrom | None = None,
            timeout: float = DEFAULT_TIMEOUT) -> Delivered:
    """Bring the agent's commits and leftover files in `run_tree` to `ref` (default
    `refs/heads/<branch>`) of the git dir `target`, where the task's branch was made at `start`
    (None: not known). `scratch` is a folder of the daemon's (outside anything a run can write)
    for the quarantine. Work that does not build on the branch is not put there; with `keep_ref`
    it is kept in the target under that name (or `-2`, `-3`, …) and the problem says so.
    `delivered(result)` is called as soon as the target holds it, before the quarantine is removed.
    Raises DeliveryError.

    `push_from(quarantine, tip)` (issue 22: run ended → PR opened) starts the push of `tip` from
    the quarantine (the daemon's own repository, holding the run's objects and, as its alternate,
    the target's) and returns `settle(final)`, which waits for that push once the branch's final
    tip is known: `tip` itself, a commit on top of it (the run's leftover files: pushed next, a
    fast-forward, before the push is reported) or None (the delivery failed: nothing is
    reported). It is called the moment the run's head commit is in the quarantine and builds on
    the branch — beside the leftover check (`add`, `write-tree`), not after it; with no such head
    (no commits, only leftover files), once the leftover commit is made. The fetch into the target
    and everything after it (`delivered`: the handoff, the review) wait for the push, so that git
    work does not share the CPU with it; the quarantine is removed after it.

    It runs as few git processes as it can before the push: none when the run's HEAD is on its copy
    of the task branch (the commit's loose object is read); else the target's object dir and branch
    in one `rev-parse`, the run's commits and their trees in one `cat-file --batch-check` (and a
    `merge-base` when the head is elsewhere). Beside the push: those, the person's ignore setting,
    `add` and `write-tree`; after it one `fetch` (none when the branch already holds the work)."""
    steptimes.mark(task_id, "d_start")
    ref = ref or f"refs/heads/{branch}"
    if os.path.islink(run_tree) or not run_tree.is_dir():
        # The agent replaced its checkout's folder with a link (to `/`, say): its files are not taken.
        raise DeliveryError(f"{run_tree} is no longer a folder; nothing there was taken over")
    quarantine = scratch / "quarantine.git"
    shutil.rmtree(quarantine, ignore_errors=True)
    scratch.mkdir(parents=True, exist_ok=True)
    pool = ThreadPoolExecutor(4, thread_name_prefix="px-delivery")
    head_push = _HeadPush(push_from, quarantine, start, task_id, timeout) if push_from is not None else None
    try:
        settings = pool.submit(_person_settings, target, timeout)
        current_of = _quarantine_beside(pool, target, ref, quarantine, timeout)
        # The run's objects copied and checked (cat-file) while `add` reads its files (one git
        # process fewer before the push): write-tree waits for the copy.
        imported = pool.submit(_import, run_tree, quarantine, branch, start, current_of, timeout,
                               head_push.copied if head_push is not None else None)
        early = pool.submit(head_push.after_import, imported) if head_push is not None else None
        head_of = partial(_head_of, imported, run_tree, start)
        tree = _leftover_tree(run_tree, quarantine, scratch, settings.result(), head_of, timeout)
        refs, trees, current = imported.result()
        head = head_of()
        made = None if tree == trees.get(head) else _commit_leftovers(run_tree, quarantine, head, tree, target,
                                                                      scratch, agent_name, task_id, timeout)
        steptimes.mark(task_id, "d_leftovers_checked")
        pushing = early.result() if early is not None else None
        candidate, problem = _on_branch(run_tree, quarantine, branch, refs, current, start, head, made,
                                        pushing.tip if pushing is not None else None, keep_ref, target, timeout)
        _push_final(push_from, pushing, quarantine, candidate if problem is None and candidate != start else None,
                    task_id)
        if candidate != current:  # the branch holds it already (no commits, nothing left): no fetch
            _set_ref(quarantine, "refs/heads/delivered", candidate)
            _fetch(quarantine, target, f"+refs/heads/delivered:{ref}", timeout)
            steptimes.mark(task_id, "d_fetched")
        result = Delivered(candidate, bool(made) and candidate == made, problem, refs.note)
    except GitError as e:
        raise DeliveryError(f"the work in {run_tree} could not be put on branch {branch} ({e})") from e
    except OSError as e:
        raise DeliveryError(f"the work in {run_tree} could not be read ({e})") from e
    else:
        if delivered is not None:
            delivered(result)  # before the clean-up below: the push need not wait for it
        return result
    finally:
        pool.shutdown(wait=True)
        if head_push is not None and head_push.started is not None:
            head_push.started.settle(None, task_id)  # failed on the way: the push ends (unreported) before its source goes
        shutil.rmtree(quarantine, ignore_errors=True)
        for name in ("index", "index.lock"):
            (scratch / name).unlink(missing_ok=True)


#: delivery.deliver's `push_from(quarantine, tip)`, returning `settle(final tip or None)`.
PushFrom = Callable[[Path, str], Callable[[str | None], None]]


class _Early:
    """A push started from the quarantine (`push_from`), settled once: by the delivery with the
    branch's final tip, or on its way out with None."""

    def __init__(self, tip: str, settle: Callable[[str | None], None]):
        self.tip, self._settle, self._settled = tip, settle, False

    def settle(self, final: str | None, task_id: str) -> None:
        if self._settled:
            return
        self._settled = True
        try:
            self._settle(final)
        except Exception:  # the push reports its own failure; the delivery goes on
            log.warning("task %s: waiting for its push failed", task_id, exc_info=True)
        steptimes.mark(task_id, "d_push_waited")


def _push_final(push_from: PushFrom | None, pushing: _Early | None, quarantine: Path, final: str | None,
                task_id: str) -> None:
    """The branch's final tip (None: nothing to push) told to the push started early, else pushed
    now; returns once the push is done and reported."""
    if pushing is not None:
        pushing.settle(final, task_id)
    elif push_from is not None and final is not None:
        _Early(final, push_from(quarantine, final)).settle(final, task_id)


class _HeadPush:
    """The push of the run's head commit, started as soon as it is known to be new and to build on
    the branch (as `_on_branch` checks it), beside the leftover check: when the run's HEAD is on its
    own copy of the task branch, the moment the run's objects are copied (`copied`: its loose object
    says it is a commit, as cat-file would read it; the branch as the run left it is where it
    builds); else once they are checked (`after_import`: cat-file, and merge-base when needed)."""

    def __init__(self, push_from: PushFrom, quarantine: Path, start: str | None, task_id: str, timeout: float):
        self.push_from, self.quarantine, self.start, self.task_id = push_from, quarantine, start, task_id
        self.timeout = timeout
        self.started: _Early | None = None

    def _push(self, head: str) -> None:
        steptimes.mark(self.task_id, "d_head_checked")
        self.started = _Early(head, self.push_from(self.quarantine, head))

    def copied(self, head: str | None, tip: str | None) -> None:
        """From `_import`, before git is asked anything (its thread; `after_import` comes after)."""
        try:
            if head and head == tip and head != self.start and _loose_commit(self.quarantine / "objects", head):
                self._push(head)
        except Exception:  # noqa: BLE001 — not pushed now: `after_import` tries again
            self.started = None

    def after_import(self, imported: Future[tuple[_RunRefs, dict[str, str], str | None]]) -> _Early | None:
        try:
            refs, _trees, current = imported.result()
            head = refs.head or refs.branch_tip or current or self.start
            if self.started is not None or head is None or head == self.start:
                return self.started
            prior = refs.branch_tip or current or self.start or head
            if head == prior or _is_ancestor(self.quarantine, prior, head, self.timeout):
                self._push(head)
        except Exception:  # noqa: BLE001 — the delivery reports it; a push started waits for its end
            pass
        return self.started


def _loose_commit(objects: Path, sha: str) -> bool:
    """`sha` is a loose object in `objects` whose header says it is a commit (what cat-file
    --batch-check reads of it)."""
    fd = open_regular(objects / sha[:2] / sha[2:]) if _SHA.match(sha) else None
    if fd is None:
        return False
    try:
        with os.fdopen(fd, "rb") as f:
            header = zlib.decompressobj().decompress(f.read(256), 64)
    except (OSError, zlib.error):
        return False
    return header.startswith(b"commit ") and b"\0" in header


def _on_branch(run_tree: Path, quarantine: Path, branch: str, refs: _RunRefs, current: str | None,
               start: str | None, head: str, made: str | None, checked: str | None, keep_ref: str | None,
               target: Path, timeout: float) -> tuple[str, str | None]:
    """The commit the branch is to hold, and why the run's work is not on it (None: it is): the
    work (`made`, else `head`) must build on the branch as the run left it (its own copy of the
    task branch, else the target's, else `start`). `checked`: a commit known to build on it."""
    candidate = made or head
    prior = refs.branch_tip or current or start or head
    # A leftover commit's parent is `head`: it builds on `head` without asking git.
    if candidate == prior or candidate == checked or (made and head in (prior, checked)) \
            or _is_ancestor(quarantine, prior, candidate, timeout):
        return candidate, None
    on = f" (its branch {refs.head_branch})" if refs.head_branch and refs.head_branch != branch else ""
    problem = (f"the agent left its checkout {run_tree} on commit {candidate[:12]}{on}, which does not "
               f"build on branch {branch}, so it was not put there")
    if keep_ref:
        _set_ref(quarantine, "refs/heads/kept", candidate)
        kept = _fetch_to_free_ref(quarantine, target, "refs/heads/kept", keep_ref, timeout)
        problem += f"; it is kept as {kept} (`git log {kept}`)"
    return prior, problem


def _head_of(imported: Future[tuple[_RunRefs, dict[str, str], str | None]], run_tree: Path,
             start: str | None) -> str:
    """The commit the run's work builds on, once its objects are imported (`_import`)."""
    refs, _trees, current = imported.result()
    head = refs.head or refs.branch_tip or current or start
    if head is None:
        raise DeliveryError(f"{run_tree} holds no commit the daemon could read")
    return head


def _fetch(quarantine: Path, target: Path, refspec: str, timeout: float) -> None:
    git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", UPLOAD_PACK, str(quarantine), refspec],
        cwd=target, env={"GIT_DIR": str(target), "GIT_ALLOW_PROTOCOL": "file"}, timeout=timeout)


def _fetch_to_free_ref(quarantine: Path, target: Path, source: str, base: str, timeout: float) -> str:
    for name in (base, *(f"{base}-{n}" for n in range(2, 100))):
        if _target_value(target, name, timeout) is None:
            _fetch(quarantine, target, f"{source}:{name}", timeout)
            return name
    raise DeliveryError(f"no free name like {base} to keep the agent's work under")


def _target_value(target: Path, ref: str, timeout: float) -> str | None:
    out = git(["rev-parse", "--verify", "-q", f"{ref}^{{commit}}"], cwd=target, env={"GIT_DIR": str(target)},
              timeout=timeout, check=False)
    sha = out.stdout.decode().strip()
    return sha if out.returncode == 0 and _SHA.match(sha) else None


def _target_state(target: Path, ref: str, timeout: float) -> tuple[str, str | None]:
    """The target's object dir (absolute) and the commit `ref` is at (None: no such branch), in one
    `rev-parse`: the path is printed first, then the commit when `--verify` finds one."""
    args = ["rev-parse", "--path-format=absolute", "--git-path", "objects", "--verify", "-q", f"{ref}^{{commit}}"]
    out = git(args, cwd=target, env={"GIT_DIR": str(target)}, timeout=timeout, check=False)
    lines = out.stdout.decode("utf-8", "surrogateescape").split("\n")
    if out.returncode not in (0, 1) or not lines[0].startswith("/"):
        raise GitError(args, out.returncode, out.stderr.decode("utf-8", "replace"), out.stdout)
    sha = lines[1].strip() if out.returncode == 0 and len(lines) > 1 else ""
    return lines[0], sha if _SHA.match(sha) else None


def _quarantine_beside(pool: ThreadPoolExecutor, target: Path, ref: str, quarantine: Path,
                       timeout: float) -> Callable[[], str | None]:
    """The quarantine made at once, while the target's `rev-parse` runs beside the copy of the
    run's objects (one git process fewer before the push): its alternate is the target's object
    dir where a plain repository keeps it (no `commondir`), set again if git says otherwise.
    Returns what gives the target's branch commit (None: no such branch)."""
    state = pool.submit(_target_state, target, ref, timeout)
    guess = quarantine_files.objects_guess(target)
    if guess is None or not quarantine_files.take(quarantine, guess):  # (one made ahead: quarantine.py)
        quarantine_files.make(quarantine, guess or state.result()[0])

    def current() -> str | None:
        objects, sha = state.result()
        if objects != guess:  # replaced whole: `add` may be reading it
            alternates = quarantine / "objects" / "info" / "alternates"
            alternates.with_name("alternates.new").write_text(objects + "\n")
            os.replace(alternates.with_name("alternates.new"), alternates)
        return sha
    return current


def _set_ref(quarantine: Path, ref: str, sha: str) -> None:
    """A branch of the quarantine (the daemon's own repository, made just now) as its loose file."""
    (quarantine / ref).write_text(sha + "\n")


# -- the run's git dir, as data ------------------------------------------------------------------

def _import(run_tree: Path, quarantine: Path, branch: str, start: str | None, current_of: Callable[[], str | None],
            timeout: float, copied: Callable[[str | None, str | None], None] | None = None
            ) -> tuple[_RunRefs, dict[str, str], str | None]:
    """The run's objects copied in, its HEAD and branch read, each checked to be a commit there;
    with the trees of those commits and of the target's (its branch, from `current_of`, and
    `start`), for the leftover check; and the target's branch commit. `copied(head, tip)`: told
    the run's HEAD and branch as read, once the objects are copied (before any git process)."""
    if not is_own_repository(run_tree):
        refs = _RunRefs(None, None, f"{run_tree}/.git is not a repository of its own; only the files there "
                                    "were taken over")
        current = current_of()
        return refs, _commit_trees(quarantine, (current, start), timeout), current
    git_dir = run_tree / ".git"
    _copy_objects(git_dir / "objects", quarantine / "objects")
    head_text = read_small(git_dir, "HEAD") or ""
    head_branch = None
    if head_text.startswith("ref: "):
        head = ref_value(git_dir, head_text[5:].strip())
        head_branch = head_text[5:].strip().removeprefix("refs/heads/")
    else:
        head = head_text.strip() or None
    tip = ref_value(git_dir, f"refs/heads/{branch}")
    if copied is not None:
        copied(head, tip)
    current = current_of()
    trees = _commit_trees(quarantine, (head, tip, current, start), timeout)
    head, tip = (head if head in trees else None), (tip if tip in trees else None)
    note = None if head else "the agent's HEAD could not be read as a commit; its files were committed on the branch"
    return _RunRefs(head, tip, note, head_branch), trees, current


def _copy_objects(src: Path, dst: Path) -> None:
    """Loose objects and pack/index pairs, regular files only; anything else is not looked at."""
    total = 0
    for entry in _entries(src):
        if _LOOSE_DIR.match(entry.name) and entry.is_dir(follow_symlinks=False):
            for obj in _entries(Path(entry.path)):
                if _LOOSE.match(obj.name):
                    total += _copy_file(Path(obj.path), dst / entry.name / obj.name, total)
        elif entry.name == "pack" and entry.is_dir(follow_symlinks=False):
            found: dict[str, set[str]] = {}
            for f in _entries(Path(entry.path)):
                m = _PACK.match(f.name)
                if m:
                    found.setdefault(m[1], set()).add(m[2])
            for base, kinds in sorted(found.items()):
                if kinds == {"pack", "idx"}:
                    for kind in ("pack", "idx"):
                        total += _copy_file(Path(entry.path) / f"{base}.{kind}", dst / "pack" / f"{base}.{kind}", total)


def _entries(path: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as it:
            return [e for e in it if not e.is_symlink()]
    except OSError:
        return []


def _copy_file(src: Path, dst: Path, copied: int) -> int:
    fd = open_regular(src)
    if fd is None:
        return 0
    with os.fdopen(fd, "rb") as fin:
        size = os.fstat(fin.fileno()).st_size
        if copied + size > MAX_IMPORT_BYTES:
            raise DeliveryError(f"the agent's repository holds more than {MAX_IMPORT_BYTES / 2**30:.0f} GiB of objects; "
                                "its work was not taken over")
        dst.parent.mkdir(parents=True, exist_ok=True)
        # Whole or not at all, under its name: `add` may write the same object there meanwhile (it
        # runs beside this copy); objects are named by their content, so one already there is it.
        tmp = dst.with_name(f"{dst.name}.tmp-{uuid.uuid4().hex}")
        try:
            with open(tmp, "xb") as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
            try:
                os.link(tmp, dst)
            except FileExistsError:
                pass
        finally:
            tmp.unlink(missing_ok=True)
    return size


def _commit_trees(quarantine: Path, shas: tuple[str | None, ...], timeout: float) -> dict[str, str]:
    """{commit id: its tree} for those of `shas` that are commits in the quarantine (its own objects
    and the target's), in one `cat-file --batch-check`; ids are checked to be 40 hex digits first."""
    wanted = list(dict.fromkeys(s for s in shas if s and _SHA.match(s)))
    if not wanted:
        return {}
    lines = "".join(f"{sha}^{{commit}}\n{sha}^{{tree}}\n" for sha in wanted).encode()
    out = git(["cat-file", "--batch-check=%(objectname) %(objecttype)"], cwd=quarantine, env=sealed_env(quarantine),
              input=lines, timeout=timeout).stdout.decode("utf-8", "replace").splitlines()
    trees = {}
    for i, sha in enumerate(wanted):
        commit, tree = (out[2 * i:2 * i + 2] + ["", ""])[:2]
        if commit == f"{sha} commit" and tree.endswith(" tree") and _SHA.match(tree[:-5]):
            trees[sha] = tree[:-5]
    return trees


def _is_ancestor(quarantine: Path, old: str, new: str, timeout: float) -> bool:
    return git(["merge-base", "--is-ancestor", old, new], cwd=quarantine, env=sealed_env(quarantine),
               timeout=timeout, check=False).returncode == 0


# -- the leftover files ----------------------------------------------------------------------------

def _leftover_tree(run_tree: Path, quarantine: Path, scratch: Path, settings: list[str],
                   head_of: Callable[[], str], timeout: float) -> str:
    """The tree of the files the run left (its work tree, read as data), with an index of the
    daemon's own. `settings`: the person's few (`_person_settings`); `head_of()`: the run's head
    commit, once its objects are copied in (write-tree checks the objects it names)."""
    index = scratch / "index"
    env = sealed_env(quarantine, GIT_WORK_TREE=str(run_tree), GIT_INDEX_FILE=str(index))
    add = [*settings, "add", "--all"]
    if not _index_from_run(run_tree, index) or git(add, cwd=run_tree, env=env, timeout=timeout,
                                                   check=False).returncode != 0:
        # No index git reads as a plain one (or `add` failed on it): start from HEAD's tree.
        index.unlink(missing_ok=True)
        git(["read-tree", head_of()], cwd=run_tree, env=env, timeout=timeout)
        git(add, cwd=run_tree, env=env, timeout=timeout)
    head_of()
    return git_text(["write-tree"], cwd=run_tree, env=env, timeout=timeout)


def _commit_leftovers(run_tree: Path, quarantine: Path, head: str, tree: str, target: Path, scratch: Path,
                      agent_name: str, task_id: str, timeout: float) -> str:
    """A commit of the run's leftover files (`tree`, not what `head` holds) on top of `head`."""
    env = sealed_env(quarantine, GIT_WORK_TREE=str(run_tree), GIT_INDEX_FILE=str(scratch / "index"))
    who = {**env, **_identity(target, timeout),
           "GIT_AUTHOR_NAME": f"{agent_name or 'agent'} (Predictor X agent)",
           "GIT_AUTHOR_EMAIL": f"{ref_component(agent_name, 'agent')}@agents.predictorx.invalid"}
    message = (f"Uncommitted changes left by agent {agent_name} in task {task_id}\n\n"
               "Committed by Predictor X when the task ended, so nothing is lost.\n")
    return git_text(["commit-tree", tree, "-p", head, "-m", message], cwd=run_tree, env=who, timeout=timeout)


def _index_from_run(run_tree: Path, index: Path) -> bool:
    """Start from a copy of the run's own index (its stat data spares hashing every file again);
    if git cannot read it as a plain index, `add` fails and the caller starts from HEAD's tree.
    What the index says only decides which files are looked at again, and `add --all` makes it
    match the files. The copy keeps the index's mtime: git looks again at every file changed in the
    same second as the index was written (its racy-entry check), and a copy dated now would hide an
    edit the agent made that second in a file of the same size."""
    fd = open_regular(run_tree / ".git" / "index")
    if fd is None:
        return False
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_INDEX_BYTES + 1)
        written = os.fstat(f.fileno())
    if len(data) > MAX_INDEX_BYTES:
        return False
    index.write_bytes(data)
    os.utime(index, ns=(written.st_atime_ns, written.st_mtime_ns))
    return True


def _person_settings(target: Path, timeout: float) -> list[str]:
    """The few of the person's settings the leftover commit keeps (an allowlist): their global
    ignore file. Read from the target, whose config no run can write."""
    out = git(["config", "--path", "--get", "core.excludesFile"], cwd=target, env={"GIT_DIR": str(target)},
              timeout=timeout, check=False).stdout.decode("utf-8", "surrogateescape").strip()
    return ["-c", f"core.excludesFile={out}"] if out and "\n" not in out else []


def _identity(target: Path, timeout: float) -> dict[str, str]:
    """The committer the person's own git would use in the target, or Predictor X's."""
    out = git(["var", "GIT_COMMITTER_IDENT"], cwd=target, env={"GIT_DIR": str(target)}, timeout=timeout,
              check=False)
    m = _IDENT.match(out.stdout.decode("utf-8", "replace").strip()) if out.returncode == 0 else None
    name, email = (m[1], m[2]) if m and m[1] else ("Predictor X", "predictorx@localhost")
    return {"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
