"""Bringing a run's work into a repository the daemon owns, reading the run's git dir as data.

An agent's repository (`runrepo`) is the agent's: its config, hooks, alternates, `commondir`,
`config.worktree`, index extensions and refs are whatever the agent wrote. Running the daemon's git
there — `add`, `commit`, `status`, `log`, a fetch from it — would make git read them as settings,
and a single setting (`core.fsmonitor`, `filter.<x>.clean`, `include.path`, `core.alternateRefsCommand`
with an alternate, …) runs a program of the agent's choosing as the daemon, outside the sandbox. A
list of bad keys always misses one, so the daemon never does that. It:

1. makes a *quarantine* repository of its own (its config written by the daemon; system and global
   config off; its only alternate the target's object store);
2. copies into it, as plain files, the object files of the agent's git dir — loose objects and
   pack/index pairs, regular files only (no symlinks, no `info/alternates`, no commit-graph) — and
   reads the agent's HEAD and task branch as text, each checked to be a commit id present there;
3. commits the files the agent left (its work tree, read as data) on top of that HEAD, with an index
   of the daemon's own, in the quarantine;
4. fetches the task's branch from the quarantine into the target (the daemon's repo cache or the
   person's repository), whose config no run can write.

The agent's work tree and git dir are only ever read; nothing of it is configuration.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .branches import ref_component
from .gitcmd import DEFAULT_TIMEOUT, GitError, git, git_text, sealed_env
from .gitdata import SHA as _SHA, open_regular, read_small, ref_value
from .runrepo import is_own_repository

#: The most bytes of object files taken from a run's repository (a hostile agent could write more).
MAX_IMPORT_BYTES = 8 * 2**30
MAX_INDEX_BYTES = 256 * 2**20
_LOOSE_DIR = re.compile(r"^[0-9a-f]{2}$")
_LOOSE = re.compile(r"^[0-9a-f]{38}$")
_PACK = re.compile(r"^(pack-[0-9a-f]{40})\.(pack|idx)$")
_IDENT = re.compile(r"^(.*) <([^<>]*)> \d+ [+-]\d{4}$")
UPLOAD_PACK = "--upload-pack=git-upload-pack"


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
            timeout: float = DEFAULT_TIMEOUT) -> Delivered:
    """Bring the agent's commits and leftover files in `run_tree` to `ref` (default
    `refs/heads/<branch>`) of the git dir `target`, where the task's branch was made at `start`
    (None: not known). `scratch` is a folder of the daemon's (outside anything a run can write)
    for the quarantine. Work that does not build on the branch is not put there; with `keep_ref`
    it is kept in the target under that name (or `-2`, `-3`, …) and the problem says so.
    Raises DeliveryError."""
    ref = ref or f"refs/heads/{branch}"
    if os.path.islink(run_tree) or not run_tree.is_dir():
        # The agent replaced its checkout's folder with a link (to `/`, say): its files are not taken.
        raise DeliveryError(f"{run_tree} is no longer a folder; nothing there was taken over")
    quarantine = scratch / "quarantine.git"
    shutil.rmtree(quarantine, ignore_errors=True)
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        _init_quarantine(quarantine, target, timeout)
        refs = _import(run_tree, quarantine, branch, timeout)
        current = _target_value(target, ref, timeout)
        head = refs.head or refs.branch_tip or current or start
        if head is None:
            raise DeliveryError(f"{run_tree} holds no commit the daemon could read")
        made = _commit_leftovers(run_tree, quarantine, head, target, scratch, agent_name, task_id, timeout)
        candidate = made or head
        prior = refs.branch_tip or current or start or head
        problem = None
        q = sealed_env(quarantine)
        if candidate != prior and not _is_ancestor(quarantine, prior, candidate, timeout):
            on = f" (its branch {refs.head_branch})" if refs.head_branch and refs.head_branch != branch else ""
            problem = (f"the agent left its checkout {run_tree} on commit {candidate[:12]}{on}, which does not "
                       f"build on branch {branch}, so it was not put there")
            if keep_ref:
                git(["update-ref", "refs/heads/kept", candidate], cwd=quarantine, env=q, timeout=timeout)
                kept = _fetch_to_free_ref(quarantine, target, "refs/heads/kept", keep_ref, timeout)
                problem += f"; it is kept as {kept} (`git log {kept}`)"
            candidate = prior
        git(["update-ref", "refs/heads/delivered", candidate], cwd=quarantine, env=q, timeout=timeout)
        _fetch(quarantine, target, f"+refs/heads/delivered:{ref}", timeout)
        return Delivered(candidate, bool(made) and candidate == made, problem, refs.note)
    except GitError as e:
        raise DeliveryError(f"the work in {run_tree} could not be put on branch {branch} ({e})") from e
    except OSError as e:
        raise DeliveryError(f"the work in {run_tree} could not be read ({e})") from e
    finally:
        shutil.rmtree(quarantine, ignore_errors=True)
        for name in ("index", "index.lock"):
            (scratch / name).unlink(missing_ok=True)


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


def _init_quarantine(quarantine: Path, target: Path, timeout: float) -> None:
    git(["init", "--quiet", "--bare", "--template=", str(quarantine)], cwd=quarantine.parent, env=sealed_env(),
        timeout=timeout)
    info = quarantine / "objects" / "info"
    info.mkdir(parents=True, exist_ok=True)
    objects = git_text(["rev-parse", "--path-format=absolute", "--git-path", "objects"], cwd=target,
                       env={"GIT_DIR": str(target)}, timeout=timeout)
    (info / "alternates").write_text(objects + "\n")


# -- the run's git dir, as data ------------------------------------------------------------------

def _import(run_tree: Path, quarantine: Path, branch: str, timeout: float) -> _RunRefs:
    if not is_own_repository(run_tree):
        return _RunRefs(None, None, f"{run_tree}/.git is not a repository of its own; only the files there "
                                    "were taken over")
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
    head, tip = _present(quarantine, head, timeout), _present(quarantine, tip, timeout)
    note = None if head else "the agent's HEAD could not be read as a commit; its files were committed on the branch"
    return _RunRefs(head, tip, note, head_branch)


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
        with open(dst, "xb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
    return size


def _present(quarantine: Path, sha: str | None, timeout: float) -> str | None:
    if not sha or not _SHA.match(sha):
        return None
    ok = git(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=quarantine, env=sealed_env(quarantine),
             timeout=timeout, check=False)
    return sha if ok.returncode == 0 else None


def _is_ancestor(quarantine: Path, old: str, new: str, timeout: float) -> bool:
    return git(["merge-base", "--is-ancestor", old, new], cwd=quarantine, env=sealed_env(quarantine),
               timeout=timeout, check=False).returncode == 0


# -- the leftover files ----------------------------------------------------------------------------

def _commit_leftovers(run_tree: Path, quarantine: Path, head: str, target: Path, scratch: Path,
                      agent_name: str, task_id: str, timeout: float) -> str | None:
    """A commit of the run's files on top of `head` (None when they are what `head` holds)."""
    index = scratch / "index"
    env = sealed_env(quarantine, GIT_WORK_TREE=str(run_tree), GIT_INDEX_FILE=str(index))
    settings = _person_settings(target, timeout)
    if not _index_from_run(run_tree, index, env, settings, timeout):
        git(["read-tree", head], cwd=run_tree, env=env, timeout=timeout)
    git([*settings, "add", "--all"], cwd=run_tree, env=env, timeout=timeout)
    tree = git_text(["write-tree"], cwd=run_tree, env=env, timeout=timeout)
    if tree == git_text(["rev-parse", f"{head}^{{tree}}"], cwd=run_tree, env=env, timeout=timeout):
        return None
    who = {**env, **_identity(target, timeout),
           "GIT_AUTHOR_NAME": f"{agent_name or 'agent'} (Predictor X agent)",
           "GIT_AUTHOR_EMAIL": f"{ref_component(agent_name, 'agent')}@agents.predictorx.invalid"}
    message = (f"Uncommitted changes left by agent {agent_name} in task {task_id}\n\n"
               "Committed by Predictor X when the task ended, so nothing is lost.\n")
    return git_text(["commit-tree", tree, "-p", head, "-m", message], cwd=run_tree, env=who, timeout=timeout)


def _index_from_run(run_tree: Path, index: Path, env: dict[str, str], settings: list[str], timeout: float) -> bool:
    """Start from a copy of the run's own index (its stat data spares hashing every file again),
    if git reads it as a plain index; else the caller starts from HEAD's tree. What the index says
    only decides which files are looked at again, and `add --all` makes it match the files."""
    fd = open_regular(run_tree / ".git" / "index")
    if fd is None:
        return False
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_INDEX_BYTES + 1)
    if len(data) > MAX_INDEX_BYTES:
        return False
    index.write_bytes(data)
    ok = git([*settings, "ls-files", "--stage", "--", ".gitignore"], cwd=run_tree, env=env, timeout=timeout,
             check=False)
    if ok.returncode != 0:
        index.unlink(missing_ok=True)
        return False
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
